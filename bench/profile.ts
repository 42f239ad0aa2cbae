/**
 * Where a verify's CPU goes: `facilitator serve` from a readable (unminified) build under
 * `node --cpu-prof`, loaded with POST /verify at concurrency 64, then its profile read back by
 * source file and by step of a request (bench/verify-steps.ts). Prints the step table, the sources
 * and the functions that cost most, and the server's CPU per request from /proc.
 *
 *   npm run bench:profile
 *   BENCH_METHOD=permit2 BENCH_REQUESTS=6000 npm run bench:profile
 *
 * Settings (environment): BENCH_REQUESTS (measured requests, 4000), BENCH_POOL (distinct signed
 * payloads, 1000), BENCH_CONCURRENCY (64), BENCH_METHOD (eip3009, permit2, upto; see lib.ts),
 * BENCH_PROFILE_KEEP (a directory to keep the .cpuprofile files in; else they are removed),
 * BENCH_OP=settle (settles from one key, each a fresh payment, confirmed, at concurrency 32),
 * BENCH_PROFILE=0 (no profiler: only the server's CPU per request), BENCH_NODE_FLAGS (more node
 * flags for serve, space-separated: `--trace-gc-nvp` prints each collection's allocated and
 * promoted bytes) and BENCH_SERVER_STDOUT (a file for serve's stdout, where those go).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type DevAccount, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { rpcProxy } from "./batch-rpc-proxy.js";
import { attribute, byStep, type CpuProfile } from "./cpu-profile.js";
import {
  benchMethod,
  cleanEnv,
  cpuMs,
  exited,
  freePort,
  serveArgs,
  setting,
  stopChild,
  tail,
} from "./lib.js";
import { loadPosts } from "./load.js";
import { SETTLE_STEPS, VERIFY_HELPERS, VERIFY_STEPS } from "./verify-steps.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** BENCH_OP=settle profiles settles (fresh payments, confirmed) from one key instead. */
const SETTLE = process.env.BENCH_OP === "settle";
/** BENCH_PROFILE=0: no profiler, only the server's CPU per request (no profiler's overhead). */
const PROFILING = process.env.BENCH_PROFILE !== "0";
const OP = SETTLE ? "settle" : "verify";
const REQUESTS = Math.floor(setting("BENCH_REQUESTS", SETTLE ? 1500 : 4000));
const POOL = Math.floor(setting("BENCH_POOL", 1000));
const CONCURRENCY = Math.floor(setting("BENCH_CONCURRENCY", SETTLE ? 32 : 64));
const WARMUP = 500;
/**
 * The readable build lives under node_modules so that its bare imports (secp256k1, pg, …) resolve
 * as dist/'s do; it is rebuilt on every run and removed after.
 */
const BUILD_DIR = path.join(ROOT, "node_modules/.cache/facilitator-profile");

function buildReadable(): string {
  execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], {
    cwd: ROOT,
    env: { ...process.env, BUILD_MINIFY: "0", BUILD_OUTDIR: BUILD_DIR },
    stdio: "inherit",
  });
  const entry = path.join(BUILD_DIR, "run.mjs");
  writeFileSync(
    entry,
    'import { main } from "./main.js";\nprocess.exit(await main(process.argv));\n',
  );
  return entry;
}

async function listening(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (exited(child)) throw new Error(`serve exited early:\n${log()}`);
    try {
      const response = await fetch(`${url}/llms.txt`);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`serve did not listen:\n${log()}`);
}

const pad = (text: string, width: number) => text.padEnd(width);
const pct = (ms: number, total: number) => `${((100 * ms) / total).toFixed(1)} %`;

function top(map: Map<string, number>, count: number, total: number): string[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => `  ${pad(pct(ms, total), 8)} ${ms.toFixed(0).padStart(6)} ms  ${name}`);
}

async function main(): Promise<number> {
  const entry = buildReadable();
  const work = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-profile-"));
  const profiles = path.join(work, "profiles");
  mkdirSync(profiles);
  const devnet = await startDevnet({ port: 0 });
  // serve reaches anvil through a counting proxy, so the profile says which RPC calls a request makes.
  const rpc = await rpcProxy(devnet.rpcUrl);
  let server: ChildProcess | undefined;
  try {
    const method = await benchMethod(devnet);
    // A settle pays once: every settle gets a payment of its own.
    const count = SETTLE ? WARMUP + REQUESTS : POOL;
    const extra = SETTLE ? { waitUntil: "confirmed" } : {};
    const bodies = await Promise.all(
      Array.from({ length: count }, async (_, i) =>
        JSON.stringify({
          ...(await method.sign(devnet.payers[i % devnet.payers.length] as DevAccount, 10_000n)),
          ...extra,
        }),
      ),
    );
    const keyFile = path.join(work, "facilitator.key");
    writeFileSync(keyFile, `${(devAccounts[0] as DevAccount).privateKey}\n`, { mode: 0o600 });
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        ...(PROFILING ? ["--cpu-prof", "--cpu-prof-dir", profiles] : []),
        ...(process.env.BENCH_NODE_FLAGS ? process.env.BENCH_NODE_FLAGS.split(" ") : []),
        entry,
        ...serveArgs({
          port,
          rpcUrl: rpc.url,
          journal: path.join(work, "journal.jsonl"),
          keyFile: SETTLE ? keyFile : undefined,
        }),
      ],
      {
        cwd: ROOT,
        env: cleanEnv(),
        stdio: [
          "ignore",
          process.env.BENCH_SERVER_STDOUT
            ? openSync(process.env.BENCH_SERVER_STDOUT, "w")
            : "ignore",
          "pipe",
        ],
      },
    );
    server = child;
    const log = tail(child.stderr);
    const url = `http://127.0.0.1:${port}`;
    await listening(url, child, log);
    const warm = await loadPosts(`${url}/${OP}`, bodies.slice(0, WARMUP), CONCURRENCY, WARMUP);
    const before = cpuMs(child.pid as number);
    const callsBefore = rpc.counts();
    const requestsBefore = rpc.requests();
    const measured = SETTLE ? bodies.slice(WARMUP) : bodies;
    const round = await loadPosts(`${url}/${OP}`, measured, CONCURRENCY, REQUESTS);
    const after = cpuMs(child.pid as number);
    const calls = Object.entries(rpc.counts())
      .map(([name, n]) => [name, (n - (callsBefore[name] ?? 0)) / REQUESTS] as const)
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1]);
    const httpRequests = (rpc.requests() - requestsBefore) / REQUESTS;
    const rpcLine = `RPC calls per ${OP} (measured ${REQUESTS}), in ${httpRequests.toFixed(2)} HTTP requests: ${calls
      .map(([name, n]) => `${name} ${n.toFixed(2)}`)
      .join(", ")}`;
    const failed = warm.failures + round.failures;
    await stopChild(child);
    server = undefined;
    const perRequest =
      before === undefined || after === undefined
        ? "n/a"
        : ((after - before) / REQUESTS).toFixed(3);
    if (!PROFILING) {
      console.log(
        `bench:profile ${method.name} ${OP}, c=${CONCURRENCY}, not profiled: server CPU per ` +
          `request (/proc, both threads, ${REQUESTS} measured): ${perRequest} ms; ${failed} failed`,
      );
      console.log(rpcLine);
      return failed > 0 ? 1 : 0;
    }

    // One profile per thread: the serving worker is the one with the handler on its stacks.
    const attributions = readdirSync(profiles)
      .filter((f) => f.endsWith(".cpuprofile"))
      .map((f) => {
        const profile = JSON.parse(readFileSync(path.join(profiles, f), "utf8")) as CpuProfile;
        return { file: f, attribution: attribute(profile, "src/http/handler.ts", VERIFY_HELPERS) };
      })
      .sort((a, b) => b.attribution.totalMs - a.attribution.totalMs);
    const keep = process.env.BENCH_PROFILE_KEEP;
    if (keep) {
      mkdirSync(keep, { recursive: true });
      cpSync(profiles, keep, { recursive: true });
    }
    const serving = attributions[0]?.attribution;
    if (!serving) throw new Error("no CPU profile was written");
    const total = serving.totalMs;
    const requests = WARMUP + REQUESTS;
    console.log(
      `bench:profile ${method.name} ${OP}, c=${CONCURRENCY}: ${requests} requests profiled ` +
        `(${WARMUP} warm-up), ${failed} failed; node ${process.version}, ${os.cpus().length} cores`,
    );
    console.log(
      `server CPU per request (/proc, both threads, measured ${REQUESTS}): ${perRequest} ms; ` +
        `profiled CPU of the serving thread per request: ${(total / requests).toFixed(3)} ms`,
    );
    console.log(rpcLine);
    console.log(
      `\nby step of a ${OP} (innermost frame of ours or node's; share of the serving thread's CPU):`,
    );
    for (const [name, ms] of [...byStep(serving, SETTLE ? SETTLE_STEPS : VERIFY_STEPS)].sort(
      (a, b) => b[1] - a[1],
    )) {
      console.log(
        `  ${pad(name, 46)} ${pad(pct(ms, total), 8)} ${(ms / requests).toFixed(4)} ms/req`,
      );
    }
    console.log("\nsources:");
    for (const line of top(serving.bySource, 30, total)) console.log(line);
    console.log("\nfunctions:");
    for (const line of top(serving.byFunction, 30, total)) console.log(line);
    return failed > 0 ? 1 : 0;
  } finally {
    if (server) await stopChild(server);
    await rpc.close();
    await devnet.stop();
    rmSync(work, { recursive: true, force: true });
    rmSync(BUILD_DIR, { recursive: true, force: true });
  }
}

process.exitCode = await main();
