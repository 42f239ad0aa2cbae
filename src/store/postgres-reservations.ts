/**
 * What payers have in flight with every replica, in PostgreSQL. A reservation is decided inside a
 * transaction holding an advisory lock per slot (chain, token, payer), so two replicas never decide
 * for the same payer at once; the decision itself (read the balance, see which of the others'
 * transactions already landed) is the in-flight ledger's.
 */
import type { Pool } from "pg";
import type { Hex } from "viem";
import type { HeldElsewhere } from "./port.js";

/** Reservations older than this are let go, as the in-process ledger does. */
const MAX_AGE = "30 minutes";
/** A landed reservation is kept this long (far past any reuse of a balance read), then dropped. */
const LANDED_KEPT = "1 minute";

export async function reserveShared<R>(
  pool: Pool,
  owner: string,
  key: string,
  spends: readonly { readonly slot: string; readonly amount: bigint }[],
  decide: (held: readonly HeldElsewhere[]) => Promise<R | undefined>,
): Promise<R | undefined> {
  const client = await pool.connect();
  // A connection lost while checked out is reported on the client: without a listener, that
  // would take the process down; the query in progress fails on its own.
  const ignore = () => undefined;
  client.on("error", ignore);
  let open = false;
  try {
    await client.query("BEGIN");
    open = true;
    const slots = [...new Set(spends.map((s) => s.slot))].sort();
    // In one order everywhere, so two replicas locking the same slots cannot deadlock.
    await client.query(
      "SELECT pg_advisory_xact_lock(hashtextextended(s, 402)) FROM unnest($1::text[]) AS s ORDER BY s",
      [slots],
    );
    // Every other settlement's hold, this replica's too (with their hashes, so deciding needs no
    // other connection); a replica that is gone counts only while its transaction may still land.
    await client.query(
      `DELETE FROM facilitator_reservations
        WHERE slot = ANY($1) AND (landed_at < now() - interval '${LANDED_KEPT}'
                                  OR created_at < now() - interval '${MAX_AGE}')`,
      [slots],
    );
    const { rows } = await client.query<{
      key: string;
      slot: string;
      amount: string;
      hashes: Hex[] | null;
      landed_block: string | null;
    }>(
      `SELECT r.key, r.slot, r.amount::text AS amount, s.hashes, r.landed_block::text
         FROM facilitator_reservations r
         LEFT JOIN facilitator_settlements s ON s.key = r.key
        WHERE r.slot = ANY($1) AND r.key <> $2
          AND (r.owner = $3 OR r.landed_block IS NOT NULL OR s.state = 'broadcast' OR EXISTS (SELECT 1 FROM facilitator_signers g
                 WHERE g.owner = r.owner AND g.expires_at > now()))`,
      [slots, key, owner],
    );
    const held = rows.map((r) => ({
      key: r.key,
      slot: r.slot,
      amount: BigInt(r.amount),
      hashes: r.hashes ?? [],
      landedIn: r.landed_block === null ? undefined : BigInt(r.landed_block),
    }));
    const refusal = await decide(held);
    if (refusal !== undefined) {
      await client.query("ROLLBACK");
      open = false;
      return refusal;
    }
    await client.query("DELETE FROM facilitator_reservations WHERE key = $1", [key]);
    const bySlot = new Map<string, bigint>();
    for (const spend of spends)
      bySlot.set(spend.slot, (bySlot.get(spend.slot) ?? 0n) + spend.amount);
    await client.query(
      `INSERT INTO facilitator_reservations (key, slot, amount, owner)
         SELECT $1, s, a::numeric, $4 FROM unnest($2::text[], $3::text[]) AS t(s, a)`,
      [key, [...bySlot.keys()], [...bySlot.values()].map(String), owner],
    );
    await client.query("COMMIT");
    open = false;
    return undefined;
  } finally {
    if (open) await client.query("ROLLBACK").catch(() => undefined);
    client.off("error", ignore);
    client.release();
  }
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
