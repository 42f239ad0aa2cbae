/**
 * A bounded load test of `POST /verify`: a devnet, `facilitator serve` as a child process, a pool
 * of distinct signed payments, then rounds at concurrency 1, 16 and 64. Prints throughput, latency
 * and the server's peak memory; exits 1 if any request failed.
 *
 *   npm run build && npm run bench
 *   BENCH_REQUESTS=5000 BENCH_SECONDS=30 BENCH_POOL=1000 npm run bench
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { benchMethod, cleanEnv, exited, freePort, serveArgs, setting, stopChild } from "./lib.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CONCURRENCY = [1, 16, 64] as const;
const WARMUP_REQUESTS = 50;
const READY_TIMEOUT_MS = 20_000;

const REQUESTS = Math.floor(setting("BENCH_REQUESTS", 1000));
const SECONDS = setting("BENCH_SECONDS", 15);
const POOL = Math.floor(setting("BENCH_POOL", 500));

interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly stderr: () => string;
}

/** The journal serve opens lives here, not in the user's ~/.local/state. */
const stateDir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-verify-"));
process.on("exit", () => rmSync(stateDir, { recursive: true, force: true }));

function startFacilitator(rpcUrl: string, port: number): ServerProcess {
  const child = spawn(
    process.execPath,
    [
      path.join(ROOT, "bin/facilitator.js"),
      ...serveArgs({ port, rpcUrl, journal: path.join(stateDir, "journal.jsonl") }),
    ],
    { cwd: ROOT, env: cleanEnv(), stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  return { child, url: `http://127.0.0.1:${port}`, stderr: () => stderr };
}

async function waitUntilListening(server: ServerProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited(server.child)) {
      throw new Error(`facilitator serve exited early:\n${server.stderr()}`);
    }
    try {
      const response = await fetch(`${server.url}/llms.txt`);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`facilitator serve did not listen within ${READY_TIMEOUT_MS} ms`);
}

/** Polls VmRSS every 100 ms and reads VmHWM at the end (Linux; elsewhere reports nothing). */
function memorySampler(pid: number) {
  const file = `/proc/${pid}/status`;
  const readKb = (field: string): number | undefined => {
    try {
      const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(file, "utf8"));
      return match ? Number(match[1]) : undefined;
    } catch {
      return undefined;
    }
  };
  let peakRssKb = readKb("VmRSS") ?? 0;
  const timer = setInterval(() => {
    peakRssKb = Math.max(peakRssKb, readKb("VmRSS") ?? 0);
  }, 100);
  return {
    /** The larger of the polled peak and the kernel's high-water mark, in KiB. */
    stop(): number | undefined {
      clearInterval(timer);
      const hwm = readKb("VmHWM");
      const peak = Math.max(peakRssKb, hwm ?? 0);
      return peak > 0 ? peak : undefined;
    },
  };
}

interface Round {
  readonly concurrency: number;
  readonly requests: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly errors: number;
  readonly samples: string[];
}

/** Sends up to `total` requests (or until `seconds` pass) with `concurrency` workers. */
async function round(
  url: string,
  bodies: readonly string[],
  concurrency: number,
  total: number,
  seconds: number,
): Promise<Round> {
  const latenciesMs: number[] = [];
  const samples: string[] = [];
  let errors = 0;
  let issued = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;

  const fail = (what: string) => {
    errors += 1;
    if (samples.length < 3) samples.push(what.slice(0, 300));
  };

  const worker = async () => {
    while (issued < total && performance.now() < deadline) {
      const body = bodies[issued % bodies.length] as string;
      issued += 1;
      const sent = performance.now();
      try {
        const response = await fetch(`${url}/verify`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        const text = await response.text();
        latenciesMs.push(performance.now() - sent);
        let success: unknown;
        try {
          success = (JSON.parse(text) as { success?: unknown }).success;
        } catch {
          success = undefined;
        }
        if (response.status !== 200 || success !== true) fail(`${response.status} ${text.trim()}`);
      } catch (error) {
        latenciesMs.push(performance.now() - sent);
        fail(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
      }
    }
  };

  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  return {
    concurrency,
    requests: latenciesMs.length,
    seconds: elapsed,
    latenciesMs,
    errors,
    samples,
  };
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

function table(rounds: readonly Round[]): string {
  const header = ["concurrency", "requests", "req/s", "p50 ms", "p99 ms", "errors"];
  const rows = rounds.map((r) => {
    const sorted = [...r.latenciesMs].sort((a, b) => a - b);
    return [
      String(r.concurrency),
      String(r.requests),
      (r.requests / r.seconds).toFixed(0),
      percentile(sorted, 50).toFixed(1),
      percentile(sorted, 99).toFixed(1),
      String(r.errors),
    ];
  });
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    cells.map((cell, i) => cell.padStart(widths[i] ?? 0)).join("  ");
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

async function main(): Promise<number> {
  if (!existsSync(path.join(ROOT, "dist/main.js"))) {
    console.error("bench: dist/ is missing; run `npm run build` first");
    return 2;
  }
  let devnet: Devnet | undefined;
  let server: ServerProcess | undefined;
  const cleanup = async () => {
    if (server) await stopChild(server.child);
    await devnet?.stop();
  };
  const interrupted = () => {
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);

  try {
    const chain = await startDevnet({ port: 0 });
    devnet = chain;
    const port = await freePort();
    server = startFacilitator(chain.rpcUrl, port);
    await waitUntilListening(server);
    const pid = server.child.pid;
    if (pid === undefined) throw new Error("facilitator serve has no pid");
    const memory = memorySampler(pid);

    const method = await benchMethod(chain);
    const signing = performance.now();
    const payers = chain.payers;
    const bodies = await Promise.all(
      Array.from({ length: POOL }, async (_, i) =>
        JSON.stringify(await method.sign(payers[i % payers.length] as DevAccount, 10_000n)),
      ),
    );
    console.log(
      `bench: POST /verify on ${server.url} (pid ${pid}), devnet ${chain.network} at ${chain.rpcUrl}`,
    );
    console.log(
      `bench: ${bodies.length} distinct signed payloads from ${payers.length} payers in ` +
        `${(performance.now() - signing).toFixed(0)} ms; up to ${REQUESTS} requests or ` +
        `${SECONDS} s per round; node ${process.version}`,
    );

    const warmup = await round(server.url, bodies, 8, WARMUP_REQUESTS, SECONDS);
    const rounds: Round[] = [];
    for (const concurrency of CONCURRENCY) {
      rounds.push(await round(server.url, bodies, concurrency, REQUESTS, SECONDS));
    }
    const peakKb = memory.stop();

    console.log("");
    console.log(table(rounds));
    console.log("");
    console.log(
      `server peak RSS: ${peakKb === undefined ? "n/a (no /proc)" : `${(peakKb / 1024).toFixed(1)} MiB`}`,
    );

    const failed = [warmup, ...rounds].filter((r) => r.errors > 0);
    if (warmup.errors > 0) console.error(`warm-up: ${warmup.errors} errors`);
    for (const r of failed) {
      for (const sample of r.samples)
        console.error(`error at concurrency ${r.concurrency}: ${sample}`);
    }
    return failed.length > 0 ? 1 : 0;
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await cleanup();
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

process.exitCode = await main();
