/** `payment-identifier` bindings in a shared store, run by one replica at a time (a lease). */
import type { IdempotencyClaim } from "../core/store.js";
import type { Query } from "./postgres-query.js";

export async function idempotencyAnswer(query: Query, id: string): Promise<unknown> {
  const { rows } = await query<{ answer: unknown }>(
    "payment_id",
    "SELECT answer FROM facilitator_payment_ids WHERE id = $1",
    [id],
  );
  return rows[0]?.answer ?? undefined;
}

/** Binds `id` to `fingerprint` and takes its lease for `owner`, or says why not. */
export async function claimIdempotency(
  query: Query,
  lease: { readonly owner: string; readonly leaseMs: number },
  id: string,
  fingerprint: string,
): Promise<IdempotencyClaim> {
  const { rowCount } = await query(
    "payment_id",
    `INSERT INTO facilitator_payment_ids (id, fingerprint, owner, expires_at)
         VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond')
       ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
         WHERE facilitator_payment_ids.fingerprint = EXCLUDED.fingerprint
           AND facilitator_payment_ids.answer IS NULL
           AND (facilitator_payment_ids.owner IS NULL OR facilitator_payment_ids.expires_at < now())`,
    [id, fingerprint, lease.owner, lease.leaseMs],
  );
  if (rowCount === 1) return { kind: "run" };
  const { rows } = await query<{ fingerprint: string; answer: unknown }>(
    "payment_id",
    "SELECT fingerprint, answer FROM facilitator_payment_ids WHERE id = $1",
    [id],
  );
  const row = rows[0];
  if (!row) return { kind: "running" };
  if (row.fingerprint !== fingerprint) return { kind: "conflict" };
  if (row.answer !== null) return { kind: "answered", answer: row.answer };
  return { kind: "running" };
}

export async function finishIdempotency(query: Query, id: string, answer: unknown): Promise<void> {
  await query(
    "payment_id",
    `UPDATE facilitator_payment_ids SET answer = COALESCE($2::jsonb, answer), owner = NULL,
         expires_at = NULL WHERE id = $1`,
    [id, answer === undefined ? null : JSON.stringify(answer)],
  );
}
