// The resync: list every AG and every PackageSource (paginated, from the cache) and bring each
// owned PackageSource in step. Conflicts fall back to syncOne, which re-reads. An AG whose claimed
// owner is not verified (docs/adr/0053) is skipped and counted: its own events report the refusal.

import { controllingPackageSource, verifyOwner } from '../../shared/core/index.js';
import type { PackageSource } from '../../shared/core/objects/types.js';
import type { Logger } from '../../shared/runtime/logger.js';
import { handled, retryLater, type Outcome } from '../../shared/runtime/outcome.js';
import type { SurfaceStalledDeps } from './deps.js';
import { syncOne, syncWith } from './sync-one.js';
import { owedFirst, tracked } from './owed.js';

const PAGE_SIZE = 500;

export async function syncAll(log: Logger, deps: SurfaceStalledDeps): Promise<Outcome> {
  const packageSources = new Map<string, PackageSource>();
  let token: string | undefined;
  do {
    const page = await deps.kube.listPackageSources({
      limit: PAGE_SIZE,
      ...(token !== undefined ? { continueToken: token } : {}),
    });
    for (const ps of page.items) {
      if (ps.metadata?.name !== undefined) packageSources.set(ps.metadata.name, ps);
    }
    token = page.continueToken;
  } while (token !== undefined);

  // Verdict Events this process owes (a resync whose verdict Event failed answered 503, and this
  // may be its redelivery): written before the sync (docs/adr/0061).
  const owed = await owedFirst(null, deps, log);
  const record = tracked(deps, log);
  let checked = 0;
  let updated = 0;
  let conflicts = 0;
  let refused = 0;
  do {
    const page = await deps.kube.listArtifactGenerators({
      limit: PAGE_SIZE,
      ...(token !== undefined ? { continueToken: token } : {}),
    });
    for (const ag of page.items) {
      checked++;
      const ref = { namespace: ag.metadata?.namespace ?? '', name: ag.metadata?.name ?? '' };
      const agLog = log.child(ref);
      const owner = controllingPackageSource(ag);
      const ps = owner !== null ? packageSources.get(owner) : undefined;
      if (ps === undefined) continue;
      if (verifyOwner(ag, ps, deps.config.packageSourceOwners).kind !== 'verified') {
        refused++;
        continue;
      }
      let result = await syncWith(ag, deps, agLog, { given: ps, cachedRead: true, record });
      if (result === 'conflict')
        result = (await syncOne(ref, undefined, deps, agLog, { record })).result;
      if (result === 'updated') updated++;
      if (result === 'conflict') conflicts++;
    }
    token = page.continueToken;
  } while (token !== undefined);
  log.info(
    { checked, updated, conflicts, refused, packageSources: packageSources.size },
    'resync done',
  );
  if (conflicts > 0) return retryLater('conflict');
  return owed === 'owed' || record.owes() ? retryLater('event-owed') : handled('resynced');
}
