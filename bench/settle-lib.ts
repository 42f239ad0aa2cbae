/**
 * What the settle benches share (settle.ts, replicas.ts): spawning `facilitator serve`, settling
 * signed payments over one or more URLs, the on-chain checks that every payment landed exactly
 * once, and the results table.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Address, createPublicClient, type Hex, http } from "viem";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import { type DevAccount, type Devnet, devAccounts } from "../src/evm/devnet/index.js";
import { benchMethod, cleanEnv, post } from "./lib.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** signSampleRequest's default amount: 0.01 USDC. */
export const AMOUNT = 10_000n;
const READY_TIMEOUT_MS = 20_000;
const REQUEST_TIMEOUT_MS = 60_000;

export function devAccount(index: number): DevAccount {
  const account = devAccounts[index];
  if (!account) throw new Error(`no dev account ${index}`);
  return account;
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly stderr: () => string;
  /**
   * What its log said besides the listening line and successful requests, counted by kind:
   * "event X" for an event line, "status N error" for an answer other than 200.
   */
  readonly notes: () => Record<string, number>;
}

/**
 * Spawns `facilitator serve --port 0 ...args` (a clean environment plus `env`) and resolves with
 * the URL of its "listening" line.
 */
export function startFacilitator(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): {
  child: ChildProcess;
  ready: Promise<ServerProcess>;
} {
  const child = spawn(
    process.execPath,
    // The rate of settlements per payer and payee is off: what a bench measures is throughput.
    [
      path.join(ROOT, "bin/facilitator.js"),
      "serve",
      "--port",
      "0",
      "--rate-per-payer",
      "0",
      ...args,
    ],
    {
      cwd: ROOT,
      env: { ...cleanEnv(), FORCE_COLOR: "0", ...env },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let head = "";
  let tail = "";
  let url: string | undefined;
  const stderr = () => `${head}${tail ? `\n…\n${tail}` : ""}`;
  const counts: Record<string, number> = {};
  let partial = "";
  const note = (line: string) => {
    let entry: { event?: unknown; status?: unknown; error?: unknown } = {};
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      // not a JSON log line
    }
    const kind =
      typeof entry.event === "string"
        ? entry.event === "listening"
          ? undefined
          : `event ${entry.event}`
        : typeof entry.status === "number"
          ? entry.status === 200
            ? undefined
            : `status ${entry.status} ${String(entry.error ?? "")}`.trim()
          : line.trim()
            ? "other output"
            : undefined;
    if (kind) counts[kind] = (counts[kind] ?? 0) + 1;
  };
  const notes = () => ({ ...counts });
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
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) note(line);
      if (url) return;
      const match = /"event":"listening","url":"([^"]+)"/.exec(head);
      if (match?.[1]) {
        url = match[1];
        clearTimeout(timer);
        resolve({ child, url, stderr, notes });
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (!url) reject(new Error(`facilitator serve exited (${code ?? signal}):\n${stderr()}`));
    });
  });
  return { child, ready };
}

export interface Settled {
  readonly latencyMs: number;
  readonly hash?: Hex | undefined;
  readonly error?: string | undefined;
}

/** POSTs `body` to `url`: how long the answer took, and the success's hash or the error. */
export async function postTimed(
  url: string,
  body: string,
): Promise<{ latencyMs: number; hash?: string; error?: string }> {
  const answer = await post(url, body, REQUEST_TIMEOUT_MS);
  const latencyMs = answer.ms;
  if (answer.status === 200 && answer.body?.success === true) {
    const hash = answer.body.transactionHash;
    return typeof hash === "string" ? { latencyMs, hash } : { latencyMs };
  }
  if (answer.status === 0) return { latencyMs, error: answer.error ?? "?" };
  return { latencyMs, error: `${answer.status} ${(answer.text ?? "").trim().slice(0, 300)}` };
}

export async function settleOne(url: string, body: string): Promise<Settled> {
  return (await postTimed(`${url}/settle`, body)) as Settled;
}

/**
 * Settles every body once, `concurrency` at a time, until all are done or `runSeconds` pass;
 * body i goes to urls[i % urls.length] (round-robin over replicas).
 */
export async function settleAll(
  urls: readonly string[],
  bodies: readonly string[],
  concurrency: number,
  runSeconds: number,
) {
  if (urls.length === 0) throw new Error("settleAll: no URL to settle at");
  const results: Settled[] = [];
  const deadline = performance.now() + runSeconds * 1000;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < bodies.length && performance.now() < deadline) {
      const index = next;
      next += 1;
      results.push(await settleOne(urls[index % urls.length] as string, bodies[index] as string));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, bodies.length) }, worker));
  const seconds = (performance.now() - started) / 1000;
  for (let i = next; i < bodies.length; i++) {
    results.push({ latencyMs: 0, error: `not sent within ${runSeconds} s` });
  }
  return { results, seconds };
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export interface Measured {
  readonly keys: number;
  readonly settles: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly errors: string[];
  readonly checks: string[];
  readonly problems: string[];
}

export interface RunResult extends Measured {
  readonly name: string;
  /** How many serve processes shared the work; a column of the table when any run sets it. */
  readonly replicas?: number;
}

/**
 * One measured run against servers already listening at `urls` on `chain`, signing with
 * `signers`: signs `settles` payments (BENCH_METHOD), warms up with one settle per signer (not
 * counted), settles them all (`concurrency` at a time, round-robin over `urls`), then checks on
 * chain that the payee got every amount once and the signers sent `settles` transactions.
 */
export async function measureSettles(
  chain: Devnet,
  urls: readonly string[],
  signers: readonly DevAccount[],
  options: { readonly settles: number; readonly concurrency: number; readonly runSeconds: number },
): Promise<Measured> {
  const { settles, concurrency, runSeconds } = options;
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
  const warmup = await settleAll(urls, await sign(signers.length), signers.length, runSeconds);
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
  const bodies = await sign(settles);
  const payeeBefore = await payeeBalance();
  const countsBefore = await Promise.all(signers.map((s) => sentBy(s.address)));

  const { results, seconds } = await settleAll(urls, bodies, concurrency, runSeconds);

  const payeeAfter = await payeeBalance();
  const countsAfter = await Promise.all(signers.map((s) => sentBy(s.address)));
  const perSigner = countsAfter.map((after, i) => after - (countsBefore[i] ?? 0));
  const sent = perSigner.reduce((a, b) => a + b, 0);
  const hashes = new Set(results.flatMap((r) => (r.hash ? [r.hash] : [])));
  const expected = BigInt(settles) * AMOUNT;

  const checks = [
    `payee +${payeeAfter - payeeBefore} (expected ${expected} = ${settles} × ${AMOUNT})`,
    `transactions sent ${sent} (expected ${settles}; per signer ${perSigner.join(", ")})`,
    `distinct transaction hashes answered ${hashes.size}`,
  ];
  const problems: string[] = [];
  if (payeeAfter - payeeBefore !== expected) problems.push(`payee delta: ${checks[0]}`);
  if (sent !== settles) problems.push(`transaction count: ${checks[1]}`);
  if (hashes.size !== results.filter((r) => r.hash).length) {
    problems.push("the same transaction hash was answered for two payments");
  }

  return {
    keys: signers.length,
    settles: results.filter((r) => !r.error).length,
    seconds,
    latenciesMs: results.filter((r) => !r.error).map((r) => r.latencyMs),
    errors: [...warmupErrors, ...results.flatMap((r) => (r.error ? [r.error] : []))],
    checks,
    problems,
  };
}

export function table(runs: readonly RunResult[]): string {
  const withReplicas = runs.some((r) => r.replicas !== undefined);
  const header = [
    "run",
    ...(withReplicas ? ["replicas"] : []),
    "keys",
    "settles",
    "seconds",
    "settles/s",
    "p50 ms",
    "p99 ms",
    "errors",
  ];
  const rows = runs.map((r) => {
    const sorted = [...r.latenciesMs].sort((a, b) => a - b);
    return [
      r.name,
      ...(withReplicas ? [String(r.replicas ?? 1)] : []),
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

/** Prints the table and each run's checks, then problems and errors; true when all passed. */
export function report(runs: readonly RunResult[]): boolean {
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
  return !failed;
}
