/**
 * The schemes' state in a shared store: each raise and change one statement, so two replicas
 * never both keep a lower highest, and a raise against a stale read is refused everywhere.
 */
import type { RaiseRefusal } from "../core/store.js";
import type { Query } from "./postgres-query.js";

export async function raiseHighest(
  query: Query,
  namespace: string,
  id: string,
  value: bigint,
  seenAt: number | undefined,
): Promise<RaiseRefusal | undefined> {
  const { rowCount } = await query(
    "raise_highest",
    `INSERT INTO facilitator_scheme_state (namespace, id, highest) VALUES ($1, $2, $3)
       ON CONFLICT (namespace, id) DO UPDATE SET highest = EXCLUDED.highest, updated_at = now()
         WHERE facilitator_scheme_state.highest <= EXCLUDED.highest
           AND facilitator_scheme_state.changed_at <= $4::bigint`,
    [namespace, id, value.toString(), seenAt ?? Number.MAX_SAFE_INTEGER],
  );
  if (rowCount === 1) return undefined;
  const { rows } = await query<{ highest: string; changed_at: string }>(
    "raise_highest",
    `SELECT highest, changed_at::text FROM facilitator_scheme_state
        WHERE namespace = $1 AND id = $2`,
    [namespace, id],
  );
  const changedAt = Number(rows[0]?.changed_at ?? 0);
  if (seenAt !== undefined && changedAt > seenAt) return { changedAt };
  return { higher: BigInt(rows[0]?.highest ?? value) };
}

/** `id` changed at `at` (or may until then): every replica reads it again before a raise. */
export async function markChanged(
  query: Query,
  namespace: string,
  id: string,
  at: number,
): Promise<void> {
  await query(
    "mark_changed",
    `INSERT INTO facilitator_scheme_state (namespace, id, highest, changed_at)
         VALUES ($1, $2, 0, $3)
       ON CONFLICT (namespace, id) DO UPDATE
         SET changed_at = GREATEST(facilitator_scheme_state.changed_at, EXCLUDED.changed_at),
             updated_at = now()`,
    [namespace, id, Math.round(at)],
  );
}
