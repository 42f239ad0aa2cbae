/**
 * GET /settlements?transaction=… on a big PostgreSQL store: how many lookups by transaction hash
 * the store answers with many clients asking at once, and how long the writes of a settle take
 * meanwhile (they share the replica's connection pool). A real PostgreSQL, rows made by SQL.
 *
 *   node --import tsx bench/settlements.ts
 *   ROWS=300000 CLIENTS=32 SECONDS=10 node --import tsx bench/settlements.ts
 */
import { createHash } from "node:crypto";
import pg from "pg";
import type { Hex } from "viem";
import { PostgresStore } from "../src/store/postgres.js";
import { FIND_BY_TRANSACTION } from "../src/store/postgres-settlements.js";
import { startPostgres } from "../test/helpers/postgres.js";
import { percentile, setting } from "./lib.js";

const ROWS = setting("ROWS", 300_000);
const CLIENTS = setting("CLIENTS", 32);
const SECONDS = setting("SECONDS", 10);

/** The transaction hash of bench row `i`, as the SQL below makes it. */
const hashOf = (i: number): Hex =>
  `0x${createHash("sha256").update(String(i)).digest("hex")}` as Hex;

const postgres = await startPostgres();
try {
  const store = await PostgresStore.open(postgres.url, { signers: [], owner: "bench" });
  const db = new pg.Client({ connectionString: postgres.url });
  await db.connect();
  const filling = performance.now();
  await db.query(
    `INSERT INTO facilitator_settlements (key, chain_id, signer, tx_nonce, hashes, raws, state, owner)
     SELECT 'bench:' || g, 8453, '0x0000000000000000000000000000000000000001', g,
            ARRAY['0x' || encode(sha256(g::text::bytea), 'hex')], '{}', 'answered', 'bench'
       FROM generate_series(1, $1::int) AS g`,
    [ROWS],
  );
  await db.query("ANALYZE facilitator_settlements");
  console.log(`${ROWS} rows in ${((performance.now() - filling) / 1000).toFixed(1)} s`);
  const explained = await db.query<{ "QUERY PLAN": string }>(`EXPLAIN ${FIND_BY_TRANSACTION}`, [
    hashOf(7),
  ]);
  console.log(explained.rows.map((row) => `  ${row["QUERY PLAN"]}`).join("\n"));
  await db.end();

  const lookups: number[] = [];
  let missed = 0;
  const client = async (until: number) => {
    while (Date.now() < until) {
      const started = performance.now();
      const hash = hashOf(1 + Math.floor(Math.random() * ROWS));
      // Any spelling of an EVM hash is the same transaction.
      const entry = await store.findByTransaction(Math.random() < 0.5 ? hash : hash.toUpperCase());
      if (!entry) missed++;
      lookups.push(performance.now() - started);
    }
  };
  // A settle's writes, one after the other: claim, record the send, the state, release.
  let settled = 0;
  const settler = async (until: number) => {
    const times: number[] = [];
    while (Date.now() < until) {
      const started = performance.now();
      const i = settled++;
      const key = `bench-settle:${i}`;
      await store.claim(key);
      await store.recordSend(
        {
          key,
          network: "eip155:8453",
          signer: "0x0000000000000000000000000000000000000002",
          txNonce: i,
        },
        hashOf(-1 - i),
        "0x00",
      );
      await store.recordState(key, "answered");
      await store.release(key);
      times.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return times;
  };
  const alone = await settler(Date.now() + 3_000);
  const until = Date.now() + SECONDS * 1000;
  const [meanwhile] = await Promise.all([
    settler(until),
    ...Array.from({ length: CLIENTS }, () => client(until)),
  ]);
  await store.close();
  const ms = (values: number[], p: number) => `${percentile(values, p).toFixed(1)} ms`;
  console.log(
    `${CLIENTS} clients, ${SECONDS} s: ${(lookups.length / SECONDS).toFixed(0)} lookups/s, p50 ${ms(lookups, 50)}, p99 ${ms(lookups, 99)}, ${missed} not found`,
  );
  console.log(
    `a settle's store writes: alone p50 ${ms(alone, 50)}; meanwhile p50 ${ms(meanwhile, 50)}, max ${ms(meanwhile, 100)}`,
  );
} finally {
  await postgres.stop();
}
