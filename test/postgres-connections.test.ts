/**
 * Each connection of the store's pool commits durably (synchronous_commit on) whatever the
 * server's default, and gets there before it serves a query: on a server whose default is off
 * (the test harness's), a query asked of a fresh connection already sees "on", and no connection
 * ever runs two queries at once (pg 8 warns of it, pg 9 removes it).
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { poolConfig } from "../src/store/postgres.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";

let postgres: Postgres;
beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

describe("the store's connections", () => {
  test("commit durably from their first query on, one query at a time", async () => {
    const url = await postgres.freshDatabase();
    const bare = new pg.Client({ connectionString: url });
    await bare.connect();
    // The server's own default, which the store must not take.
    expect((await bare.query("SHOW synchronous_commit")).rows[0]).toEqual({
      synchronous_commit: "off",
    });
    await bare.end();

    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    const pool = new pg.Pool(poolConfig(url));
    pool.on("error", () => undefined);
    try {
      // Eight at once: each opens a fresh connection and asks at once.
      const answers = await Promise.all(
        Array.from({ length: 8 }, () => pool.query("SHOW synchronous_commit")),
      );
      expect(answers.map((a) => a.rows[0]?.synchronous_commit)).toEqual(Array(8).fill("on"));
      expect(pool.totalCount).toBe(8);
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => /already executing a query/.test(w))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await pool.end();
    }
  });
});
