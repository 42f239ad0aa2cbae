/**
 * A settlement looked up by one of its transactions on PostgreSQL (GET /settlements, `facilitator
 * status`) costs an index lookup, not a scan of the table: with many rows the planner takes the
 * GIN index on hashes; and a database made before the index gets it at start-up, its EVM hashes
 * lower-cased. A real PostgreSQL.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PostgresStore } from "../src/store/postgres.js";
import { FIND_BY_TRANSACTION } from "../src/store/postgres-settlements.js";
import { migrateTo, type Postgres, startPostgres } from "./helpers/postgres.js";

let postgres: Postgres;

beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

const hashOf = (i: number) => `0x${createHash("sha256").update(String(i)).digest("hex")}`;

async function withClient<T>(url: string, use: (db: pg.Client) => Promise<T>): Promise<T> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return await use(db);
  } finally {
    await db.end();
  }
}

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

describe("a settlement by its transaction on PostgreSQL", () => {
  test("100,000 settlements: the lookup the store makes uses the index on hashes, not a Seq Scan", async () => {
    const url = await postgres.freshDatabase("many");
    const store = await PostgresStore.open(url, { signers: [] });
    try {
      const rows = 100_000;
      const plan = await withClient(url, async (db) => {
        await db.query(
          `INSERT INTO facilitator_settlements (key, network, signer, tx_nonce, hashes, raws, state)
           SELECT 'k' || g, 'eip155:8453', '0x0000000000000000000000000000000000000001', g,
                  ARRAY['0x' || encode(sha256(g::text::bytea), 'hex')], '{}', 'answered'
             FROM generate_series(1, $1::int) AS g`,
          [rows],
        );
        await db.query("ANALYZE facilitator_settlements");
        const { rows: explained } = await db.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
          `EXPLAIN (FORMAT JSON) ${FIND_BY_TRANSACTION}`,
          [hashOf(rows / 2)],
        );
        return explained[0]?.["QUERY PLAN"][0].Plan as PlanNode;
      });
      const nodes = nodesOf(plan);
      expect(nodes.map((n) => n["Node Type"])).not.toContain("Seq Scan");
      expect(nodes.map((n) => n["Index Name"])).toContain("facilitator_settlements_hashes");
      // And it finds the row, whatever the case of the hash asked for.
      const found = await store.findByTransaction(hashOf(rows / 2).toUpperCase());
      expect(found?.key).toBe(`k${rows / 2}`);
    } finally {
      await store.close();
    }
  }, 60_000);

  test("a database made before the index gets it at start-up, EVM hashes lower-cased, Solana signatures kept", async () => {
    const url = await postgres.freshDatabase("before_index");
    const upper = `0x${hashOf(1).slice(2).toUpperCase()}`;
    const signature =
      "5h5wDvnCHiHhuS58BvLxqjQUnKyUkwrvJiAG4WoJRUZy3aG2UPbLqUEHvDyWPEuSFXzcLDevSNyfXRZvxCUdZCLk";
    await withClient(url, async (db) => {
      // The schema of the facilitator before this one: migrations 1 to 7.
      await migrateTo(db, 7);
      await db.query(
        `INSERT INTO facilitator_settlements (key, chain_id, signer, tx_nonce, hashes, raws, state)
         VALUES ('evm', 8453, '0x01', 1, ARRAY[$1, $2], '{}', 'answered'),
                ('svm', 0, '0x01', 0, ARRAY[$3], '{}', 'answered')`,
        [hashOf(0), upper, signature],
      );
    });
    const store = await PostgresStore.open(url, { signers: [] });
    try {
      const { indexes, hashes } = await withClient(url, async (db) => ({
        indexes: (
          await db.query<{ indexname: string }>(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'facilitator_settlements'",
          )
        ).rows.map((r) => r.indexname),
        hashes: (
          await db.query<{ key: string; hashes: string[] }>(
            "SELECT key, hashes FROM facilitator_settlements ORDER BY key",
          )
        ).rows,
      }));
      expect(indexes).toContain("facilitator_settlements_hashes");
      expect(hashes).toEqual([
        { key: "evm", hashes: [hashOf(0), hashOf(1)] },
        { key: "svm", hashes: [signature] },
      ]);
      expect((await store.findByTransaction(upper))?.key).toBe("evm");
      expect((await store.findByTransaction(signature))?.key).toBe("svm");
      expect(await store.findByTransaction(signature.toLowerCase())).toBeUndefined();
    } finally {
      await store.close();
    }
  }, 60_000);
});
