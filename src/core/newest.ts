/** Bounded memory kept newest-first (a Map's insertion order); past the bound the oldest go. */

/** Sets `key` to `value` as the newest entry of `map`, forgetting the oldest beyond `max`. */
export function setNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > max) {
    const oldest = map.keys().next();
    if (oldest.done) return;
    map.delete(oldest.value);
  }
}
