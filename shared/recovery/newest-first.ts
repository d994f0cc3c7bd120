// A Map kept to its `max` most recently set entries: the memory of an optimisation (the history
// a process read, the actions it emitted) stays bounded however long the process lives.

/** Sets `key` as the most recent entry and drops the oldest beyond `max`. */
export function setNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= max) break;
    map.delete(oldest);
  }
}
