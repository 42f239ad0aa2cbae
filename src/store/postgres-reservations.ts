/**
 * What payers have in flight with every replica: decided under an advisory lock per slot, in one
 * statement when no other replica holds anything for the payer, else while the ledger decides.
 */
import type { Pool } from "pg";
import type { HeldElsewhere, TxHash } from "../core/store.js";
import { inTransaction, withClient } from "./postgres-query.js";

/** Landed holds are kept this long (far past any reuse of a balance read); all holds at most 30 min. */
export const STALE_RESERVATIONS = `DELETE FROM facilitator_reservations
  WHERE landed_at < now() - interval '1 minute' OR created_at < now() - interval '30 minutes'`;

export async function reserveShared<R>(
  pool: Pool,
  owner: string,
  key: string,
  spends: readonly { readonly slot: string; readonly amount: bigint }[],
  decide: (held: readonly HeldElsewhere[]) => Promise<R | undefined>,
): Promise<R | undefined> {
  const bySlot = new Map<string, bigint>();
  for (const spend of spends) bySlot.set(spend.slot, (bySlot.get(spend.slot) ?? 0n) + spend.amount);
  const slots = [...bySlot.keys()];
  const amounts = [...bySlot.values()].map(String);
  const alone = await pool.query<{ alone: boolean }>(
    "SELECT facilitator_reserve_alone($1, $2, $3, $4) AS alone",
    [key, slots, amounts, owner],
  );
  if (alone.rows[0]?.alone) return undefined;

  return withClient(pool, (client) =>
    inTransaction(client, async () => {
      // In one order everywhere, so two replicas locking the same slots cannot deadlock.
      await client.query(
        "SELECT pg_advisory_xact_lock(hashtextextended(s, 402)) FROM unnest($1::text[]) AS s ORDER BY s",
        [slots],
      );
      // Every other settlement's hold on these slots, this replica's too (with their hashes, so
      // deciding needs no other connection); a gone replica's count while they may still land.
      const { rows } = await client.query<{
        key: string;
        slot: string;
        amount: string;
        hashes: TxHash[] | null;
        landed_block: string | null;
      }>(
        `SELECT r.key, r.slot, r.amount::text AS amount, s.hashes, r.landed_block::text
           FROM (SELECT * FROM facilitator_others_hold($1, $2, $3)
                 UNION ALL
                 SELECT * FROM facilitator_reservations
                  WHERE slot = ANY ($1) AND key <> $2 AND owner = $3) r
           LEFT JOIN facilitator_settlements s ON s.key = r.key`,
        [slots, key, owner],
      );
      const held = rows.map((r) => ({
        key: r.key,
        slot: r.slot,
        amount: BigInt(r.amount),
        hashes: r.hashes ?? [],
        landedIn: r.landed_block === null ? undefined : BigInt(r.landed_block),
      }));
      // A refusal writes nothing: its commit only lets the locks go.
      const refusal = await decide(held);
      if (refusal !== undefined) return refusal;
      await client.query(
        `INSERT INTO facilitator_reservations (key, slot, amount, owner)
           SELECT $1, t.s, t.a::numeric, $4 FROM unnest($2::text[], $3::text[]) AS t(s, a)
         ON CONFLICT (key, slot) DO UPDATE SET amount = EXCLUDED.amount, owner = EXCLUDED.owner,
           created_at = now(), landed_block = NULL, landed_at = NULL`,
        [key, slots, amounts, owner],
      );
      return undefined;
    }),
  );
}

export async function releaseShared(pool: Pool, key: string, landedIn?: bigint): Promise<void> {
  if (landedIn === undefined) {
    await pool.query("DELETE FROM facilitator_reservations WHERE key = $1", [key]);
    return;
  }
  await pool.query(
    `UPDATE facilitator_reservations SET landed_block = $2, landed_at = now()
      WHERE key = $1 AND landed_block IS NULL`,
    [key, landedIn.toString()],
  );
}
