/**
 * The CLI as another machine gets it (README, "Install"): `npm pack`, then `npm install -g` of the
 * tarball into a fresh prefix, and `npx` of it. The installed CLI runs with a fresh HOME from an
 * empty directory outside the clone, so that only what the package holds and the dependencies npm
 * installs for it can be found: none of the clone's node_modules or dist/. npm fetches the
 * dependencies from the registry; the host's npm cache serves those it holds, so a run after the
 * first is quicker.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync } from "node:fs";
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const execFileAsync = promisify(execFile);
const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-packed-"));
const prefix = path.join(dir, "prefix");
const home = path.join(dir, "home");
const work = path.join(dir, "work");
const children: ChildProcess[] = [];

afterAll(async () => {
  // Ctrl-C, so that a devnet stops its anvil; SIGKILL if that takes more than 10 s.
  const running = children.filter((child) => child.exitCode === null && child.signalCode === null);
  await Promise.all(
    running.map(async (child) => {
      const stopped = interrupt(child);
      const late = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await stopped;
      clearTimeout(late);
    }),
  );
  // Two installs' worth of files (thousands): slow to remove on a busy disk.
  await rm(dir, { recursive: true, force: true });
}, 300_000);

interface Pack {
  filename: string;
  size: number;
  files: { path: string }[];
}

let pack: Pack;
let npx: Run;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** npm's own environment, without the npm_* variables of an `npm test` that runs this file. */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith("npm_")),
  );
}

/** A machine that never saw the clone: a fresh HOME, PATH with node and the global prefix only. */
function userEnv(): NodeJS.ProcessEnv {
  const system = (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((entry) => entry !== "" && !path.resolve(entry).startsWith(ROOT));
  const bin = path.join(prefix, "bin");
  return {
    PATH: [bin, path.dirname(process.execPath), ...system].join(path.delimiter),
    HOME: home,
    TMPDIR: os.tmpdir(),
    FORCE_COLOR: "0",
  };
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, ms: number): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: work, env, timeout: ms }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** `script` in bash as the user types it, devnet.env sourced first when given. */
function shell(script: string, envFile?: string): Promise<Run> {
  const source = envFile ? `source '${envFile}' && ` : "";
  return run("bash", ["-c", `${source}${script}`], userEnv(), 60_000);
}

function start(script: string): { child: ChildProcess; out: () => string; err: () => string } {
  const child = spawn("bash", ["-c", script], {
    cwd: work,
    env: userEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  let err = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    out += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    err += chunk;
  });
  return { child, out: () => out, err: () => err };
}

async function until(read: () => string, pattern: RegExp, child: ChildProcess): Promise<string> {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const match = pattern.exec(read());
    if (match) return match[1] ?? match[0];
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}: ${read()}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} in: ${read()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** SIGINT (Ctrl-C), and the exit code it ends with. */
function interrupt(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  child.kill("SIGINT");
  return exited;
}

beforeAll(async () => {
  for (const folder of [prefix, home, work]) mkdirSync(folder, { recursive: true });
  // `npm pack` runs prepare, which builds dist/ first.
  const packed = await execFileAsync(
    "npm",
    ["pack", "--json", "--pack-destination", dir, "--loglevel=warn"],
    { cwd: ROOT, env: npmEnv(), maxBuffer: 16 * 1024 * 1024 },
  );
  [pack] = JSON.parse(packed.stdout) as Pack[];
  const tarball = path.join(dir, pack.filename);
  // npm's cache is the host's (what it holds is not fetched again), but npx's installs and npm's
  // logs stay in this directory.
  const { stdout: hostCache } = await execFileAsync("npm", ["config", "get", "cache"], {
    env: npmEnv(),
  });
  mkdirSync(path.join(hostCache.trim(), "_cacache"), { recursive: true });
  mkdirSync(path.join(dir, "cache"));
  symlinkSync(path.join(hostCache.trim(), "_cacache"), path.join(dir, "cache", "_cacache"), "dir");
  const flags = ["--cache", path.join(dir, "cache"), "--prefer-offline", "--no-audit", "--no-fund"];
  // npm itself keeps the user's configuration (how it reaches the registry).
  const env = npmEnv();
  // The two installs at once: each mostly waits on the disk and the registry.
  const [installed, ran] = await Promise.all([
    run("npm", ["install", "-g", "--prefix", prefix, ...flags, tarball], env, 400_000),
    run(
      "npx",
      ["--yes", ...flags, `--package=${tarball}`, "facilitator", "--version"],
      env,
      400_000,
    ),
  ]);
  expect(installed.code, installed.stderr).toBe(0);
  npx = ran;
}, 420_000);

describe("the package, packed and installed", () => {
  it("holds the built CLI, its docs and README, and no source, test or bench", () => {
    const files = pack.files.map((file) => file.path);
    expect(files).toEqual(expect.arrayContaining(["bin/facilitator.js", "dist/main.js"]));
    expect(files).toContain("dist/serve-worker.js");
    expect(files).toContain("docs/devnet.md");
    const other = files.filter(
      (file) => !/^(bin|dist|docs)\//.test(file) && !["package.json", "README.md"].includes(file),
    );
    expect(other).toEqual([]);
    // Hundreds of kB: the bundle, not a node_modules or a test fixture that slipped in.
    expect(pack.size).toBeLessThan(2_000_000);
  });

  it("gives a global `facilitator` that runs outside the clone", async () => {
    const bin = path.join(prefix, "bin", "facilitator");
    expect(realpathSync(bin).startsWith(realpathSync(prefix))).toBe(true);
    expect(await shell("facilitator --version")).toMatchObject({ code: 0, stdout: "0.1.0\n" });
  });

  it("runs through npx of the tarball", () => {
    expect(npx.stderr).not.toMatch(/ERR_|Error:/);
    expect(npx).toMatchObject({ code: 0, stdout: "0.1.0\n" });
  });

  it("runs devnet --demo, then verify, settle and serve with the devnet's files", async () => {
    const devnet = start("exec facilitator devnet --demo --port 0");
    const envFile = await until(devnet.out, /source (\S+devnet\.env)\n/, devnet.child);
    const demo = devnet.out();
    expect(demo).toMatch(/settle {2}→\n\{\n {2}"success": true/);
    // Installed, the commands to try are the global command's, not `npx facilitator`: outside the
    // clone that would fetch the registry's package of that name, someone else's.
    expect(demo).toContain("    facilitator pay --amount 0.01 | facilitator settle -\n");
    expect(demo).not.toContain("npx ");
    const files = path.dirname(envFile);

    const verified = await shell(`facilitator verify ${files}/request.json`, envFile);
    expect(JSON.parse(verified.stdout), verified.stderr).toMatchObject({ success: true });
    const settled = await shell(`facilitator settle ${files}/request.json`, envFile);
    expect(JSON.parse(settled.stdout), settled.stderr).toMatchObject({ success: true });

    const serve = start(`source '${envFile}' && exec facilitator serve --port 0`);
    const url = await until(serve.err, /"url":"(http:\/\/[^"]+)"/, serve.child);
    const body = readFileSync(path.join(files, "request-x402.json"));
    const post = (route: string) =>
      fetch(`${url}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      }).then((response) => response.json());
    expect(await post("/verify")).toMatchObject({ isValid: true });
    expect(await post("/settle")).toMatchObject({ success: true });
    // prom-client, loaded only for /metrics, is there.
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('facilitator_requests_total{op="settle"');
    expect(await interrupt(serve.child)).toBe(0);
    expect(await interrupt(devnet.child)).toBe(0);
  }, 240_000);

  it("loads pg for a PostgreSQL store and litesvm for the Solana devnet", async () => {
    // pg is found: the store is refused for the connection, not for a missing package.
    const store = await shell("facilitator serve --port 0 --store postgres://u@127.0.0.1:1/x");
    expect(store.code).toBe(2);
    expect(store.stderr).toContain("the settlement store cannot be reached (connect ECONNREFUSED");

    const devnet = start("exec facilitator devnet --svm-only --json --svm-port 0");
    const envFile = await until(devnet.out, /"envFile":"([^"]+)"/, devnet.child);
    const settled = await shell(
      `facilitator settle ${path.dirname(envFile)}/request-svm.json`,
      envFile,
    );
    expect(JSON.parse(settled.stdout), settled.stderr).toMatchObject({ success: true });
    expect(await interrupt(devnet.child)).toBe(0);
  }, 240_000);
});
