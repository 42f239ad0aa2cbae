/**
 * Retention on a real PostgreSQL (`--retain-days`, postgres-retention.ts): of 100k settlements,
 * the final ones past retention move to the archive, in batches, and nothing else does (not
 * broadcast, submitted or landed ones, not recent ones); a settle's writes complete while a batch
 * holds its rows; `status` finds an archived settlement by its transaction, its payment
 * identifier and its key, and still says not found for what neither table holds; every lookup
 * and the batch itself go through indexes; and an idle replica (reconciler passes, lease
 * renewals, the retention chore) reads the settlements table and the payment identifiers (100k
 * answered ones) with no sequential scan, counted by pg_stat_user_tables. The same count with
 * the index of migration 1 in place of migration 15's, and without migration 17's, rises with
 * every pass: the count sees what it is meant to.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { reconcileOnce } from "../src/core/reconciler.js";
import { settlementStatus } from "../src/core/status.js";
import { PostgresStore } from "../src/store/postgres.js";
import { MOVE_FINAL, RETENTION_BATCH } from "../src/store/postgres-retention.js";
import { FIND_BY_TRANSACTION, GET_SETTLEMENT } from "../src/store/postgres-settlements.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";

const ROWS = 100_000;
const DAYS = 30;
const SIGNER = "0x00000000000000000000000000000000000000a1";
let postgres: Postgres;
let url: string;
let client: pg.Client;

/** The i-th row's transaction hash, as the insert below makes it. */
const hashOf = (i: number) => `0x${md5Hex(i)}`;
let md5s: Map<number, string>;
const md5Hex = (i: number) => md5s.get(i) as string;

/**
 * Rows 1..100k, a minute apart: the first 20k from 1 to 15 days old, which stay whatever their
 * state, the rest from 31 to 87 days old; final (answered, failed, dropped in turn) but one in a
 * hundred, which is broadcast, submitted or landed and stays however old.
 */
const STATE = `CASE WHEN i % 100 = 0 THEN (ARRAY['broadcast','submitted','landed'])[1 + (i / 100) % 3]
                    ELSE (ARRAY['answered','failed','dropped'])[1 + i % 3] END`;
const RECENT = 20_000;
const AGE = `CASE WHEN i <= ${RECENT} THEN interval '1 day' + i * interval '1 minute'
                  ELSE interval '31 days' + (i - ${RECENT}) * interval '1 minute' END`;

beforeAll(async () => {
  // Autovacuum off: its reads must not be mistaken for ours in the counts.
  postgres = await startPostgres({ settings: { autovacuum: "off" } });
  url = await postgres.freshDatabase("retention");
  await (await PostgresStore.open(url, { signers: [] })).close();
  client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(
    `INSERT INTO facilitator_settlements
       (key, network, signer, tx_nonce, expect, hashes, raws, state, owner, updated_at, created_at)
     SELECT 'eip3009:8453:0xtoken:' || i, 'eip155:8453', $2, i,
            jsonb_build_object('from', '0xpayer' || (i % 997), 'token', '0xtoken', 'value', '1000'),
            ARRAY['0x' || md5(i::text) || md5((-i)::text)], '{}', ${STATE},
            'replica:old', now() - ${AGE}, now() - ${AGE}
       FROM generate_series(1, $1::int) AS i`,
    [ROWS, SIGNER],
  );
  const { rows } = await client.query<{ i: number; h: string }>(
    "SELECT i, md5(i::text) || md5((-i)::text) AS h FROM generate_series(1, $1::int) AS i",
    [ROWS],
  );
  md5s = new Map(rows.map((r) => [r.i, r.h]));
  await client.query("ANALYZE facilitator_settlements");
}, 180_000);

afterAll(async () => {
  await client?.end();
  await postgres?.stop();
});

/** Rows the insert made past retention and final: what must move. */
function expectedMoved(): number {
  let n = 0;
  for (let i = RECENT + 1; i <= ROWS; i++) if (i % 100 !== 0) n++;
  return n;
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}
const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

/** The sequential scans of either settlements table in `sql`'s plan (not run: EXPLAIN alone). */
async function seqScans(sql: string, args: unknown[]): Promise<string[]> {
  const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
    `EXPLAIN (FORMAT JSON) ${sql}`,
    args,
  );
  const plan = rows[0]?.["QUERY PLAN"][0]?.Plan as PlanNode;
  const scans = nodes(plan)
    .filter((n) => n["Node Type"] === "Seq Scan")
    .map((n) => n["Relation Name"] ?? "?")
    .filter((name) => name.startsWith("facilitator_settlements"));
  if (scans.length > 0) console.log(JSON.stringify(plan, null, 1).slice(0, 4000));
  return scans;
}

async function count(table: string, where = "true"): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    `SELECT count(*) AS n FROM ${table} WHERE ${where}`,
  );
  return Number(rows[0]?.n);
}

/** A settle's writes, as the pipeline makes them: claim, record the send, answer, release. */
async function settleWrites(store: PostgresStore, n: number): Promise<number> {
  const started = performance.now();
  const key = `eip3009:8453:0xtoken:new${n}`;
  expect(await store.claim(key)).toBe(true);
  const hash = `0x${n.toString(16).padStart(64, "0")}` as const;
  await store.recordSend(
    { key, network: "eip155:8453", signer: SIGNER, txNonce: 1_000_000 + n },
    hash,
    "0x02",
  );
  await store.markAnswered(key);
  await store.release(key);
  return performance.now() - started;
}

describe(`retention over ${ROWS.toLocaleString("en-US")} settlements`, () => {
  test("the batch, and every lookup of both tables, go through indexes", async () => {
    expect(await seqScans(MOVE_FINAL, [DAYS, RETENTION_BATCH])).toEqual([]);
    expect(await seqScans(FIND_BY_TRANSACTION, [hashOf(5)])).toEqual([]);
    expect(await seqScans(GET_SETTLEMENT, ["eip3009:8453:0xtoken:5"])).toEqual([]);
  });

  test("final settlements past retention move, in batches a settle never waits on", async () => {
    const store = await PostgresStore.open(url, {
      signers: [SIGNER],
      retainDays: DAYS,
      owner: "replica:a",
    });
    try {
      const before = await count("facilitator_settlements");
      const keptStates = await count(
        "facilitator_settlements",
        "state NOT IN ('answered', 'failed', 'dropped')",
      );

      // One batch holds its rows, uncommitted: a settle's writes go through meanwhile.
      const held = new pg.Client({ connectionString: url });
      await held.connect();
      await held.query("BEGIN");
      const batch = await held.query(MOVE_FINAL, [DAYS, RETENTION_BATCH]);
      expect(batch.rowCount).toBe(RETENTION_BATCH);
      const waited = await Promise.race([
        settleWrites(store, 0),
        new Promise<string>((resolve) => setTimeout(() => resolve("blocked"), 5_000)),
      ]);
      await held.query("COMMIT");
      await held.end();
      expect(waited, "a settle's writes while a retention batch holds its rows").not.toBe(
        "blocked",
      );

      // The rest, with settles running beside it.
      let running = true;
      const latencies: number[] = [];
      const settles = (async () => {
        for (let n = 1; running; n++) latencies.push(await settleWrites(store, n));
      })();
      const started = performance.now();
      const moved = await store.retention.pass();
      const tookMs = performance.now() - started;
      running = false;
      await settles;

      const archived = await count("facilitator_settlements_archive");
      const sizeOf = async (table: string) => {
        const { rows } = await client.query<{ bytes: string }>(
          "SELECT pg_total_relation_size($1) AS bytes",
          [table],
        );
        return Number(rows[0]?.bytes);
      };
      const hotBytes = await sizeOf("facilitator_settlements");
      const archiveBytes = await sizeOf("facilitator_settlements_archive");
      console.log("retention:", {
        bytesPerRowHot: Math.round(hotBytes / before),
        bytesPerRowArchive: Math.round(archiveBytes / archived),
        moved: RETENTION_BATCH + moved,
        tookMs: Math.round(tookMs),
        settlesBeside: latencies.length,
        settleMsMax: Math.round(Math.max(...latencies)),
        settleMsMedian: Math.round(latencies.sort((a, b) => a - b)[latencies.length >> 1] ?? 0),
        firstSettleMs: Math.round(waited as number),
      });
      expect(RETENTION_BATCH + moved).toBe(expectedMoved());
      expect(archived).toBe(expectedMoved());
      expect(latencies.length).toBeGreaterThan(0);
      // What stays: the recent ones, and every one not final, however old.
      expect(await count("facilitator_settlements")).toBe(
        before - expectedMoved() + 1 + latencies.length,
      );
      expect(
        await count("facilitator_settlements", "state NOT IN ('answered', 'failed', 'dropped')"),
      ).toBe(keptStates);
      expect(
        await count(
          "facilitator_settlements_archive",
          `state NOT IN ('answered', 'failed', 'dropped') OR updated_at > now() - interval '${DAYS} days'`,
        ),
      ).toBe(0);
      // Nothing left to move: a second pass moves nothing.
      expect(await store.retention.pass()).toBe(0);
    } finally {
      await store.close();
    }
  }, 180_000);

  test("status finds an archived settlement by transaction, payment identifier and key", async () => {
    const store = await PostgresStore.open(url, { signers: [], retainDays: DAYS });
    try {
      const old = 60_003; // 58 days old, answered
      const key = `eip3009:8453:0xtoken:${old}`;
      expect(await count("facilitator_settlements_archive", `key = '${key}'`)).toBe(1);
      expect(await count("facilitator_settlements", `key = '${key}'`)).toBe(0);

      const byHash = await settlementStatus([], store, { transaction: hashOf(old) });
      expect(byHash).toMatchObject({ found: true, key, state: "answered" });

      const id = "retained-payment-0001";
      expect(await store.claimIdempotency(id, "fingerprint")).toEqual({ kind: "run" });
      await store.finishIdempotency(id, {
        ok: true,
        payer: "0xpayer",
        transactionHash: hashOf(old),
        network: "eip155:8453",
      });
      const byId = await settlementStatus([], store, { paymentIdentifier: id });
      expect(byId).toMatchObject({ found: true, key, state: "answered" });

      expect((await store.get(key))?.state).toBe("answered");
      // In neither table: not found, as before.
      const missing = await settlementStatus([], store, { transaction: `0x${"ab".repeat(32)}` });
      expect(missing.found).toBe(false);
      expect(missing.detail).toMatch(/holds no settlement/);
      await client.query("ANALYZE facilitator_settlements_archive");
      expect(await seqScans(FIND_BY_TRANSACTION, [hashOf(old)])).toEqual([]);
      expect(await seqScans(GET_SETTLEMENT, [key])).toEqual([]);
    } finally {
      await store.close();
    }
  }, 60_000);

  test("one replica of two runs the move when it is due, and neither again within its period", async () => {
    await client.query(
      `INSERT INTO facilitator_settlements (key, network, signer, tx_nonce, hashes, raws, state, updated_at)
       VALUES ('eip3009:8453:0xtoken:chore', 'eip155:8453', $1, 1, ARRAY['0x${"cd".repeat(32)}'], '{}',
               'answered', now() - interval '40 days')`,
      [SIGNER],
    );
    await client.query("DELETE FROM facilitator_chores");
    const [a, b] = await Promise.all(
      ["replica:a", "replica:b"].map((owner) =>
        PostgresStore.open(url, { signers: [], retainDays: DAYS, owner }),
      ),
    );
    try {
      const moved = await Promise.all([a?.retain(), b?.retain()]);
      expect(moved.sort()).toEqual([0, 1]);
      const { rows } = await client.query<{ owner: string }>(
        "SELECT owner FROM facilitator_chores WHERE name = 'retention'",
      );
      expect(["replica:a", "replica:b"]).toContain(rows[0]?.owner);
      expect(await Promise.all([a?.retain(), b?.retain()])).toEqual([0, 0]);
    } finally {
      await Promise.all([a?.close(), b?.close()]);
    }
  }, 60_000);

  test("an idle replica reads the settlements and payment-identifier tables with no sequential scan", async () => {
    // 100k identifiers answered long ago (no owner): what a replica's lease renewals must not read.
    await client.query(
      `INSERT INTO facilitator_payment_ids (id, fingerprint, answer)
       SELECT 'idle-payment-' || i, md5(i::text), '{"success":true}'::jsonb
         FROM generate_series(1, $1::int) AS i`,
      [ROWS],
    );
    await client.query("ANALYZE facilitator_settlements; ANALYZE facilitator_payment_ids");
    const idle = await idleSeqScans(10);
    console.log("sequential scans in 10 idle passes:", idle);
    expect(idle).toEqual({ settlements: 0, paymentIds: 0 });

    // The same count with migration 1's index (broadcast only) and without migration 17's: every
    // pass scans the settlements, every lease renewal the identifiers.
    await client.query(`DROP INDEX facilitator_settlements_unsettled;
      CREATE INDEX facilitator_settlements_unsettled
        ON facilitator_settlements (updated_at) WHERE state = 'broadcast';
      DROP INDEX facilitator_payment_ids_owner;
      ANALYZE facilitator_settlements; ANALYZE facilitator_payment_ids;`);
    const before = await idleSeqScans(3);
    console.log("the same without migrations 15 and 17, 3 passes:", before);
    expect(before.settlements).toBeGreaterThanOrEqual(3);
    expect(before.paymentIds).toBeGreaterThanOrEqual(1);
  }, 120_000);
});

/**
 * Sequential scans of facilitator_settlements and facilitator_payment_ids over `passes` idle
 * reconciler passes, a second apart (the leases renewed meanwhile).
 */
async function idleSeqScans(passes: number): Promise<{ settlements: number; paymentIds: number }> {
  const seqScans = async () => {
    await client.query("SELECT pg_stat_clear_snapshot()");
    const { rows } = await client.query<{ relname: string; seq_scan: string }>(
      `SELECT relname, seq_scan FROM pg_stat_user_tables
        WHERE relname IN ('facilitator_settlements', 'facilitator_payment_ids')`,
    );
    const of = (table: string) => Number(rows.find((r) => r.relname === table)?.seq_scan);
    return {
      settlements: of("facilitator_settlements"),
      paymentIds: of("facilitator_payment_ids"),
    };
  };
  // Our own counts above, reported now, before the count starts.
  await client.query("SELECT pg_stat_force_next_flush()");
  const before = await seqScans();
  // The retention chore falls due during the run, as it does every few minutes.
  await client.query("UPDATE facilitator_chores SET due_at = now() - interval '1 second'");
  const store = await PostgresStore.open(url, {
    signers: [SIGNER],
    retainDays: DAYS,
    leaseMs: 3_000,
    owner: "replica:idle",
  });
  for (let pass = 0; pass < passes; pass++) {
    await reconcileOnce([], store, { idleMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  // A replica's connections report what they read when they end.
  await store.close();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const after = await seqScans();
  return {
    settlements: after.settlements - before.settlements,
    paymentIds: after.paymentIds - before.paymentIds,
  };
}
