/**
 * The PostgreSQL harness the store tests stand on: a real server that keeps its data across an
 * outage (halt, resume), gives each test file an empty database, and leaves nothing running.
 */
import { connect } from "node:net";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { type Postgres, startPostgres } from "./helpers/postgres.js";

let server: Postgres | undefined;
afterAll(() => server?.stop());

/** A client whose lost connection is an answer to a query, not an uncaught 'error' event. */
async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  c.on("error", () => {});
  await c.connect();
  return c;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => resolve(socket.destroy() && true));
    socket.once("error", () => resolve(false));
  });
}

describe("PostgreSQL harness", () => {
  it("keeps rows across halt and resume, makes fresh databases, and stops for good", async () => {
    server = await startPostgres();
    const port = Number(new URL(server.url).port);
    const before = await client(server.url);
    await before.query("CREATE TABLE settlement (key text PRIMARY KEY, state text NOT NULL)");
    await before.query("INSERT INTO settlement VALUES ('k1', 'settled')");

    await server.halt();
    await expect(before.query("SELECT 1")).rejects.toThrow(/terminat|Connection|not queryable/i);
    await expect(client(server.url)).rejects.toThrow(/ECONNREFUSED/);

    await server.resume();
    const after = await client(server.url);
    const { rows } = await after.query("SELECT state FROM settlement WHERE key = 'k1'");
    expect(rows).toEqual([{ state: "settled" }]);
    await after.end();

    const fresh = await client(await server.freshDatabase());
    const table = await fresh.query("SELECT to_regclass('settlement') AS t");
    expect(table.rows).toEqual([{ t: null }]);
    await fresh.end();

    await server.stop();
    expect(await accepts(port)).toBe(false);
  });
});
