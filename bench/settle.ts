/**
 * Settle throughput: distinct payments settled through `facilitator serve` (a child process) with
 * `waitUntil: confirmed`, against a fresh devnet per run; once from one settlement key, once from
 * a pool of four. Prints settles/s and latency, then checks on chain that every payment landed
 * exactly once (the payee's balance and the signers' transaction counts). Exits 1 on any error.
 *
 *   npm run build && npm run bench:settle
 *   BENCH_SETTLES=500 BENCH_SETTLE_CONCURRENCY=64 npm run bench:settle
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Address, createPublicClient, type Hex, http } from "viem";
import { testUsdcAbi } from "../src/devnet/artifacts.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/devnet/index.js";
import { benchMethod, cleanEnv, exited, setting, stopChild } from "./lib.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** signSampleRequest's default amount: 0.01 USDC. */
const AMOUNT = 10_000n;
const READY_TIMEOUT_MS = 20_000;
const REQUEST_TIMEOUT_MS = 60_000;

const SETTLES = Math.floor(setting("BENCH_SETTLES", 200));
const CONCURRENCY = Math.floor(setting("BENCH_SETTLE_CONCURRENCY", 32));
/** Most one run may take; settles not started by then count as errors. */
const RUN_SECONDS = setting("BENCH_SETTLE_SECONDS", 120);

/** anvil dev accounts with ETH and no other role in the devnet's payments (8 is the funder). */
const POOL_INDEXES = [0, 6, 7, 8] as const;

function devAccount(index: number): DevAccount {
  const account = devAccounts[index];
  if (!account) throw new Error(`no dev account ${index}`);
  return account;
}

interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly stderr: () => string;
}

/** Spawns `facilitator serve --port 0` and resolves with the URL of its "listening" line. */
function startFacilitator(args: readonly string[]): {
  child: ChildProcess;
  ready: Promise<ServerProcess>;
} {
  const child = spawn(
    process.execPath,
    [path.join(ROOT, "bin/facilitator.js"), "serve", "--port", "0", ...args],
    { cwd: ROOT, env: { ...cleanEnv(), FORCE_COLOR: "0" }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let head = "";
  let tail = "";
  let url: string | undefined;
  const stderr = () => `${head}${tail ? `\n…\n${tail}` : ""}`;
  const ready = new Promise<ServerProcess>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`facilitator serve did not listen within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    );
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      // One log line per request: keep the start and the last few kB only.
      if (head.length < 4_000) head += chunk;
      else tail = (tail + chunk).slice(-4_000);
      if (url) return;
      const match = /"event":"listening","url":"([^"]+)"/.exec(head);
      if (match?.[1]) {
        url = match[1];
        clearTimeout(timer);
        resolve({ child, url, stderr });
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (!url) reject(new Error(`facilitator serve exited (${code ?? signal}):\n${stderr()}`));
    });
  });
  return { child, ready };
}

interface Settled {
  readonly latencyMs: number;
  readonly hash?: Hex | undefined;
  readonly error?: string | undefined;
}

async function settleOne(url: string, body: string): Promise<Settled> {
  const sent = performance.now();
  try {
    const response = await fetch(`${url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await response.text();
    const latencyMs = performance.now() - sent;
    let answer: { success?: unknown; transactionHash?: unknown } = {};
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      // not JSON: reported below
    }
    if (response.status === 200 && answer.success === true) {
      return { latencyMs, hash: answer.transactionHash as Hex };
    }
    return { latencyMs, error: `${response.status} ${text.trim().slice(0, 300)}` };
  } catch (error) {
    const latencyMs = performance.now() - sent;
    return { latencyMs, error: error instanceof Error ? `${error.name}: ${error.message}` : "?" };
  }
}

/** Settles every body once, `concurrency` at a time, until all are done or the deadline passes. */
async function settleAll(url: string, bodies: readonly string[], concurrency: number) {
  const results: Settled[] = [];
  const deadline = performance.now() + RUN_SECONDS * 1000;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < bodies.length && performance.now() < deadline) {
      const body = bodies[next] as string;
      next += 1;
      results.push(await settleOne(url, body));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, bodies.length) }, worker));
  const seconds = (performance.now() - started) / 1000;
  for (let i = next; i < bodies.length; i++) {
    results.push({ latencyMs: 0, error: `not sent within ${RUN_SECONDS} s` });
  }
  return { results, seconds };
}

/** Nearest-rank percentile of sorted values. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

interface RunResult {
  readonly name: string;
  readonly keys: number;
  readonly settles: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly errors: string[];
  readonly checks: string[];
  readonly problems: string[];
}

async function run(name: string, signers: readonly DevAccount[]): Promise<RunResult> {
  let devnet: Devnet | undefined;
  let child: ChildProcess | undefined;
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-settle-"));
  const cleanup = async () => {
    if (child) await stopChild(child);
    await devnet?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const interrupted = () => {
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    const chain = await startDevnet({ port: 0 });
    devnet = chain;
    const keyFile = path.join(dir, "keys");
    writeFileSync(keyFile, `${signers.map((s) => s.privateKey).join("\n")}\n`, { mode: 0o600 });
    const started = startFacilitator([
      "--rpc-url",
      chain.rpcUrl,
      "--private-key-file",
      keyFile,
      "--journal",
      path.join(dir, "journal.jsonl"),
      "--confirm-timeout",
      "60",
    ]);
    child = started.child;
    const server = await started.ready;

    const method = await benchMethod(chain);
    const sign = (count: number) =>
      Promise.all(
        Array.from({ length: count }, async (_, i) =>
          JSON.stringify({
            ...(await method.sign(chain.payers[i % chain.payers.length] as DevAccount, AMOUNT)),
            waitUntil: "confirmed",
          }),
        ),
      );

    // Warm-up, one settle per key (not counted): each lane learns its nonce, the server its RPC.
    const warmup = await settleAll(server.url, await sign(signers.length), signers.length);
    const warmupErrors = warmup.results.filter((r) => r.error).map((r) => `warm-up: ${r.error}`);

    const rpc = createPublicClient({ transport: http(chain.rpcUrl, { retryCount: 0 }) });
    const sentBy = (address: Address) => rpc.getTransactionCount({ address });
    const payeeBalance = () =>
      rpc.readContract({
        address: method.token,
        abi: testUsdcAbi,
        functionName: "balanceOf",
        args: [chain.payee.address],
      });
    const bodies = await sign(SETTLES);
    const payeeBefore = await payeeBalance();
    const countsBefore = await Promise.all(signers.map((s) => sentBy(s.address)));

    const { results, seconds } = await settleAll(server.url, bodies, CONCURRENCY);

    const payeeAfter = await payeeBalance();
    const countsAfter = await Promise.all(signers.map((s) => sentBy(s.address)));
    const perSigner = countsAfter.map((after, i) => after - (countsBefore[i] ?? 0));
    const sent = perSigner.reduce((a, b) => a + b, 0);
    const hashes = new Set(results.flatMap((r) => (r.hash ? [r.hash] : [])));
    const expected = BigInt(SETTLES) * AMOUNT;

    const checks = [
      `payee +${payeeAfter - payeeBefore} (expected ${expected} = ${SETTLES} × ${AMOUNT})`,
      `transactions sent ${sent} (expected ${SETTLES}; per signer ${perSigner.join(", ")})`,
      `distinct transaction hashes answered ${hashes.size}`,
    ];
    const problems: string[] = [];
    if (payeeAfter - payeeBefore !== expected) problems.push(`payee delta: ${checks[0]}`);
    if (sent !== SETTLES) problems.push(`transaction count: ${checks[1]}`);
    if (hashes.size !== results.filter((r) => r.hash).length) {
      problems.push("the same transaction hash was answered for two payments");
    }
    if (exited(server.child)) problems.push(`serve exited early:\n${server.stderr()}`);

    return {
      name,
      keys: signers.length,
      settles: results.filter((r) => !r.error).length,
      seconds,
      latenciesMs: results.filter((r) => !r.error).map((r) => r.latencyMs),
      errors: [...warmupErrors, ...results.flatMap((r) => (r.error ? [r.error] : []))],
      checks,
      problems,
    };
  } finally {
    await cleanup();
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

function table(runs: readonly RunResult[]): string {
  const header = ["run", "keys", "settles", "seconds", "settles/s", "p50 ms", "p99 ms", "errors"];
  const rows = runs.map((r) => {
    const sorted = [...r.latenciesMs].sort((a, b) => a - b);
    return [
      r.name,
      String(r.keys),
      String(r.settles),
      r.seconds.toFixed(2),
      (r.settles / r.seconds).toFixed(1),
      percentile(sorted, 50).toFixed(0),
      percentile(sorted, 99).toFixed(0),
      String(r.errors.length),
    ];
  });
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ");
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

async function main(): Promise<number> {
  if (!existsSync(path.join(ROOT, "dist/main.js"))) {
    console.error("bench: dist/ is missing; run `npm run build` first");
    return 2;
  }
  console.log(
    `bench: POST /settle (waitUntil confirmed), ${SETTLES} distinct payments at concurrency ` +
      `${CONCURRENCY}, a fresh devnet and serve process per run; node ${process.version}`,
  );
  const runs: RunResult[] = [];
  try {
    runs.push(await run("one key", [devAccount(0)]));
    runs.push(await run("pool of 4", POOL_INDEXES.map(devAccount)));
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }

  console.log("");
  console.log(table(runs));
  console.log("");
  for (const r of runs) {
    console.log(`${r.name}: ${r.checks.join("; ")}`);
  }
  let failed = false;
  for (const r of runs) {
    for (const problem of r.problems) console.error(`${r.name}: FAILED ${problem}`);
    for (const error of r.errors.slice(0, 3)) console.error(`${r.name}: error ${error}`);
    if (r.errors.length > 3) console.error(`${r.name}: … ${r.errors.length - 3} more errors`);
    failed ||= r.problems.length > 0 || r.errors.length > 0;
  }
  if (!failed) console.log("every payment landed exactly once");
  return failed ? 1 : 0;
}

process.exitCode = await main();
