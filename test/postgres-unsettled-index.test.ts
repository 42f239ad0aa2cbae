/**
 * The settlements still followed are found through an index at 100k rows, whatever the states
 * asked: the plans of start-up's load, the reconciler's pass, `doctor`'s count and `status`'s
 * lookup by transaction read no sequential scan of facilitator_settlements (migration 15). With
 * the index as migration 1 made it (`broadcast` only), the reconciler's and start-up's plans
 * are sequential scans: checked here too, so the test tells the two apart. Real PostgreSQL, its
 * planner after ANALYZE.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { OPEN_FOR_DOCTOR } from "../src/cli/commands/doctor/doctor-store.js";
import { PostgresStore } from "../src/store/postgres.js";
import {
  FIND_BY_TRANSACTION,
  LOAD_UNSETTLED,
  OPEN_SETTLEMENTS,
} from "../src/store/postgres-settlements.js";
import { MIGRATIONS } from "../src/store/schema.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";

const ROWS = 100_000;
let postgres: Postgres;
let client: pg.Client;

beforeAll(async () => {
  postgres = await startPostgres();
  const url = await postgres.freshDatabase("unsettled_index");
  (await PostgresStore.open(url, { signers: [] })).close();
  client = new pg.Client({ connectionString: url });
  await client.connect();
  // A month of history in miniature: one settlement in a thousand still followed (half of them
  // answered submitted), the rest final.
  await client.query(
    `INSERT INTO facilitator_settlements
       (key, network, signer, tx_nonce, expect, hashes, raws, state, owner, updated_at)
     SELECT 'eip3009:8453:0xtoken:0xpayer' || (i % 997) || ':0x' || md5(i::text), 'eip155:8453',
            '0xsigner', i,
            jsonb_build_object('from', '0xpayer' || (i % 997), 'token', '0xtoken', 'value', '1000'),
            ARRAY['0x' || md5(i::text) || md5((-i)::text)], '{}',
            CASE i % 1000 WHEN 0 THEN 'broadcast' WHEN 1 THEN 'submitted' ELSE 'answered' END,
            'replica:1', now() - i * interval '1 second'
       FROM generate_series(1, $1::int) AS i`,
    [ROWS],
  );
  await client.query("ANALYZE facilitator_settlements");
}, 120_000);

afterAll(async () => {
  await client?.end();
  await postgres?.stop();
});

/** The queries each part asks, with the arguments it gives them. */
const QUERIES: [string, string, unknown[]][] = [
  ["start-up's load", LOAD_UNSETTLED, []],
  ["the reconciler's pass (and `reconcile`)", OPEN_SETTLEMENTS, [10_000]],
  ["doctor's open settlements", OPEN_FOR_DOCTOR, []],
  ["status by transaction", FIND_BY_TRANSACTION, [`0x${"ab".repeat(32)}`]],
];

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

async function planOf(sql: string, args: unknown[]) {
  const { rows } = await client.query<{
    "QUERY PLAN": [{ Plan: PlanNode; "Execution Time": number }];
  }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, args);
  const [top] = rows[0]?.["QUERY PLAN"] ?? [];
  if (!top) throw new Error("no plan");
  const scans = nodes(top.Plan).filter(
    (n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "facilitator_settlements",
  );
  return {
    scans: scans.length,
    ms: top["Execution Time"],
    types: nodes(top.Plan).map((n) => n["Node Type"]),
  };
}

describe(`the followed settlements among ${ROWS.toLocaleString("en-US")}`, () => {
  test("every query of them goes through an index; the index before migration 15 did not", async () => {
    // The index as migration 1 made it, which migration 15 replaces.
    await client.query(`DROP INDEX facilitator_settlements_unsettled;
      CREATE INDEX facilitator_settlements_unsettled
        ON facilitator_settlements (updated_at) WHERE state = 'broadcast';`);
    const before = await planOf(LOAD_UNSETTLED, []);
    const beforeOpen = await planOf(OPEN_SETTLEMENTS, [10_000]);
    expect(before.scans).toBe(1);
    expect(beforeOpen.scans).toBe(1);

    const fix = MIGRATIONS.find((m) =>
      /unsettled[\s\S]*state IN \('broadcast', 'submitted'\)/.test(m),
    );
    await client.query(fix as string);
    const report: Record<string, string> = {
      "start-up's load, index of migration 1": `${before.types.join(" > ")}, ${before.ms.toFixed(1)} ms`,
      "reconciler's pass, index of migration 1": `${beforeOpen.types.join(" > ")}, ${beforeOpen.ms.toFixed(1)} ms`,
    };
    for (const [what, sql, args] of QUERIES) {
      const plan = await planOf(sql, args);
      report[what] = `${plan.types.join(" > ")}, ${plan.ms.toFixed(1)} ms`;
      expect(plan.scans, `${what}: ${plan.types.join(" > ")}`).toBe(0);
    }
    console.log("plans at", ROWS, "rows:", report);
  }, 60_000);
});
