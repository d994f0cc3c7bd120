// What covers a follow-up that could not be armed (docs/adr/0061-owed-events.md), named in the
// `coveredBy` field of the `follow-up not armed` log line so that a count of the uncovered ones
// (bench P9) needs no guessing:
// - `redelivery`: the delivery answers 503, and the Broker's redelivery evaluates again and arms
//   (an AG event: that AG; a ping: the whole sweep, settling the alarm). If every redelivery
//   fails, the resync still covers it.
// - `resync`: the delivery answers 200 (the failure is not transient: a 403 or a bad request, our
//   misconfiguration); the resync PingSource's sweep, every 5 minutes, evaluates every AG, emits
//   what is due whether or not an alarm exists, and settles the alarm on the earliest due time.

export const COVERED_BY_REDELIVERY = 'redelivery';
export const COVERED_BY_RESYNC = 'resync';
