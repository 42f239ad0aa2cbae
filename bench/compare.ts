/**
 * Our facilitator next to the x402 reference facilitator (@x402/core + @x402/evm 2.27), on one
 * devnet, on this machine: verify throughput and latency at concurrency 1, 16 and 64, settle
 * throughput from one key, the cold CLI against a bare node process, and peak memory. Prints one
 * table (ours | reference | ours/reference) and the targets; exits 1 if any request failed or a
 * payment did not land exactly once.
 *
 *   npm run build && npm run bench:compare
 *   BENCH_REQUESTS=2000 BENCH_SECONDS=20 BENCH_SETTLES=1000 npm run bench:compare
 *
 * Settings (environment): BENCH_REQUESTS (verify requests per level, 1000), BENCH_SECONDS (time
 * bound per verify level, 15), BENCH_POOL (distinct signed payloads for verify, 1000),
 * BENCH_SETTLES (settles per server, 600), BENCH_SETTLE_CONCURRENCY (32), BENCH_SETTLE_SECONDS
 * (time bound per settle run, 45), BENCH_COLD_RUNS (7).
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Address, createPublicClient, type Hex, http } from "viem";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import {
  type Answer,
  cleanEnv,
  cpuMs,
  exited,
  freePort,
  percentile,
  post,
  setting,
  stopChild,
  tail,
  urlOnStdout,
} from "./lib.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const REQUESTS = Math.floor(setting("BENCH_REQUESTS", 1000));
const SECONDS = setting("BENCH_SECONDS", 15);
const POOL = Math.floor(setting("BENCH_POOL", 1000));
const SETTLES = Math.floor(setting("BENCH_SETTLES", 600));
const SETTLE_CONCURRENCY = Math.floor(setting("BENCH_SETTLE_CONCURRENCY", 32));
const SETTLE_SECONDS = setting("BENCH_SETTLE_SECONDS", 45);
const COLD_RUNS = Math.floor(setting("BENCH_COLD_RUNS", 7));

const VERIFY_LEVELS = [1, 16, 64] as const;
const WARMUP_REQUESTS = 100;
const WARMUP_CONCURRENCY = 8;
/** signSampleRequest's default amount: 0.01 USDC. */
const AMOUNT = 10_000n;
/** anvil dev account indexes: 0 settles for us, 7 for the reference (1..5 pay, 8 funds, 9 is paid). */
const OURS_SIGNER = 0;
const REFERENCE_SIGNER = 7;

const READY_TIMEOUT_MS = 30_000;
const VERIFY_TIMEOUT_MS = 30_000;
const SETTLE_TIMEOUT_MS = 60_000;
const COLD_TIMEOUT_MS = 30_000;
const CHAIN_CHECK_ATTEMPTS = 10;
const CHAIN_CHECK_PAUSE_MS = 300;

// ---------------------------------------------------------------------------------------------
// Child processes: every one is tracked, stopped at the end, and killed if this process exits.

const children = new Set<ChildProcess>();
/** Set on SIGINT/SIGTERM: load loops stop issuing requests. */
let interrupting = false;

function killAllNow(): void {
  for (const child of children) {
    if (!exited(child)) child.kill("SIGKILL");
  }
}
process.on("exit", killAllNow);

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Server {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly log: () => string;
}

/** `node bin/facilitator.js serve` on a free port; ready once GET /llms.txt answers. */
async function startOurs(rpcUrl: string, keyFile: string, journal: string): Promise<Server> {
  const port = await freePort();
  const child = track(
    spawn(
      process.execPath,
      [
        path.join(ROOT, "bin/facilitator.js"),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--rpc-url",
        rpcUrl,
        "--private-key-file",
        keyFile,
        "--journal",
        journal,
        "--quiet",
      ],
      { cwd: ROOT, env: cleanEnv(), stdio: ["ignore", "ignore", "pipe"] },
    ),
  );
  const log = tail(child.stderr);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited(child)) throw new Error(`facilitator serve exited early:\n${log()}`);
    try {
      const response = await fetch(`${url}/llms.txt`, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.ok && child.pid !== undefined) {
        return { name: "ours", child, pid: child.pid, url, log };
      }
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`facilitator serve did not listen within ${READY_TIMEOUT_MS} ms:\n${log()}`);
}

/**
 * bench/reference-server.ts under tsx (`node --import tsx`, so the pid is the server itself and
 * its memory is the server's); ready once it prints its URL on stdout.
 */
async function startReference(rpcUrl: string, key: Hex): Promise<Server> {
  const child = track(
    spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/reference-server.ts")], {
      cwd: ROOT,
      env: {
        ...cleanEnv(),
        REFERENCE_RPC_URL: rpcUrl,
        REFERENCE_PRIVATE_KEY: key,
        REFERENCE_PORT: "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
  const log = tail(child.stderr);
  const url = await urlOnStdout(child, "reference server", log, READY_TIMEOUT_MS);
  if (child.pid === undefined) throw new Error(`reference server has no pid:\n${log()}`);
  return { name: "reference", child, pid: child.pid, url, log };
}

/** VmHWM (peak resident set) of a live process, in MiB; undefined without /proc. */
function peakRssMiB(pid: number): number | undefined {
  try {
    const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

interface Cpu {
  /** CPU ms the server, anvil and this process (the load generator) used during a round. */
  readonly server?: number | undefined;
  readonly anvil?: number | undefined;
  readonly client: number;
}

function cpuMeter(serverPid: number, anvilPid: number): () => Cpu {
  const server = cpuMs(serverPid);
  const anvil = cpuMs(anvilPid);
  const client = process.cpuUsage();
  return () => {
    const serverAfter = cpuMs(serverPid);
    const anvilAfter = cpuMs(anvilPid);
    const used = process.cpuUsage(client);
    return {
      server: server === undefined || serverAfter === undefined ? undefined : serverAfter - server,
      anvil: anvil === undefined || anvilAfter === undefined ? undefined : anvilAfter - anvil,
      client: (used.user + used.system) / 1000,
    };
  };
}

const perRequest = (total: number | undefined, count: number) =>
  total === undefined || count === 0 ? undefined : total / count;

// ---------------------------------------------------------------------------------------------
// Load.

const failure = (answer: Answer): string | undefined =>
  answer.error ??
  (answer.status === 200 && answer.body?.success === true
    ? undefined
    : `${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);

interface Round {
  readonly cpu?: Cpu;
  readonly count: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly errors: string[];
}

/**
 * Sends bodies[i % length] to `url`, `concurrency` at a time, until `total` have been sent or
 * `seconds` have passed (requests not sent by then are not counted).
 */
async function load(
  url: string,
  bodies: readonly string[],
  concurrency: number,
  total: number,
  seconds: number,
  timeoutMs: number,
): Promise<Round & { answers: Answer[] }> {
  const latenciesMs: number[] = [];
  const errors: string[] = [];
  const answers: Answer[] = [];
  let issued = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const worker = async () => {
    while (issued < total && performance.now() < deadline && !interrupting) {
      const body = bodies[issued % bodies.length] as string;
      issued += 1;
      const answer = await post(url, body, timeoutMs);
      answers.push(answer);
      latenciesMs.push(answer.ms);
      const problem = failure(answer);
      if (problem) errors.push(problem);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  const elapsed = (performance.now() - started) / 1000;
  return { count: latenciesMs.length, seconds: elapsed, latenciesMs, errors, answers };
}

/** "CPU per request: server x ms, anvil y ms, load generator z ms" for a round. */
function cpuLine(round: Round): string {
  const each = (ms: number | undefined) => fmt(perRequest(ms, round.count), 2);
  const cpu = round.cpu;
  if (!cpu) return "CPU n/a";
  return (
    `CPU ms per request: server ${each(cpu.server)}, anvil ${each(cpu.anvil)}, ` +
    `load generator ${each(cpu.client)}`
  );
}

const median = (values: readonly number[]) => percentile(values, 50);

// ---------------------------------------------------------------------------------------------
// Settle with an on-chain exactly-once check.

interface SettleRun extends Round {
  readonly checks: string;
  readonly problems: string[];
}

async function settleRun(
  devnet: Devnet,
  server: Server,
  signer: Address,
  warmupBody: string,
  bodies: readonly string[],
): Promise<SettleRun> {
  const warmup = await post(`${server.url}/settle`, warmupBody, SETTLE_TIMEOUT_MS);
  const warmupProblem = failure(warmup);

  const rpc = createPublicClient({ transport: http(devnet.rpcUrl, { retryCount: 0 }) });
  const payeeBalance = () =>
    rpc.readContract({
      address: devnet.token.address,
      abi: testUsdcAbi,
      functionName: "balanceOf",
      args: [devnet.payee.address],
    });
  const sentBy = () => rpc.getTransactionCount({ address: signer });
  const payeeBefore = await payeeBalance();
  const countBefore = await sentBy();

  const meter = cpuMeter(server.pid, devnet.anvil.pid);
  const round = await load(
    `${server.url}/settle`,
    bodies,
    SETTLE_CONCURRENCY,
    bodies.length,
    SETTLE_SECONDS,
    SETTLE_TIMEOUT_MS,
  );
  const cpu = meter();
  const notSent = bodies.length - round.count;

  // Every answered settle waited for its receipt; a failed one may still land a moment later.
  const expectedDelta = BigInt(bodies.length) * AMOUNT;
  let payeeDelta = 0n;
  let sent = 0;
  for (let attempt = 0; attempt < CHAIN_CHECK_ATTEMPTS; attempt++) {
    payeeDelta = (await payeeBalance()) - payeeBefore;
    sent = (await sentBy()) - countBefore;
    if (payeeDelta === expectedDelta && sent === bodies.length) break;
    if (round.errors.length === 0 && notSent === 0) await sleep(CHAIN_CHECK_PAUSE_MS);
    else break;
  }
  const hashes = round.answers.flatMap((a) =>
    a.status === 200 && typeof a.body?.transactionHash === "string" ? [a.body.transactionHash] : [],
  );
  const distinct = new Set(hashes).size;
  const problems: string[] = [];
  if (payeeDelta !== expectedDelta) {
    problems.push(`payee balance +${payeeDelta}, expected +${expectedDelta}`);
  }
  if (sent !== bodies.length) {
    problems.push(`${sent} transactions from the signer, expected ${bodies.length}`);
  }
  if (distinct !== hashes.length) problems.push("one transaction hash answered for two payments");
  const errors = [
    ...(warmupProblem ? [`warm-up: ${warmupProblem}`] : []),
    ...round.errors,
    ...(notSent > 0 ? [`${notSent} settles not sent within ${SETTLE_SECONDS} s`] : []),
  ];
  return {
    cpu,
    count: round.count - round.errors.length,
    seconds: round.seconds,
    latenciesMs: round.answers.filter((a) => !failure(a)).map((a) => a.ms),
    errors,
    checks:
      `payee +${payeeDelta} (expected ${bodies.length} × ${AMOUNT}), ` +
      `${sent} transactions sent, ${distinct} distinct hashes`,
    problems,
  };
}

// ---------------------------------------------------------------------------------------------
// Cold CLI.

interface Timed {
  readonly ms: number;
  readonly error?: string;
}

function timedRun(args: readonly string[], check: (stdout: string) => boolean): Promise<Timed> {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = track(
      spawn(process.execPath, args, {
        cwd: ROOT,
        env: cleanEnv(),
        stdio: ["ignore", "pipe", "pipe"],
      }),
    );
    let stdout = "";
    const stderr = tail(child.stderr);
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      if (stdout.length < 16_000) stdout += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), COLD_TIMEOUT_MS);
    child.once("exit", (code, signal) => {
      const ms = performance.now() - started;
      clearTimeout(timer);
      if (code === 0 && check(stdout)) resolve({ ms });
      else {
        const output = `${stdout.trim().slice(0, 200)} ${stderr().slice(-300)}`.replace(
          /\s+/g,
          " ",
        );
        const why = `exit ${code ?? signal}: ${output}`;
        resolve({ ms, error: why });
      }
    });
    child.once("error", (error) => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - started, error: error.message });
    });
  });
}

/** One eth_chainId over fetch: the floor of any node process that asks a chain something. */
const BARE_NODE_SCRIPT = `
const url = process.argv[2];
const response = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
});
const answer = await response.json();
if (typeof answer.result !== "string") process.exit(1);
console.log(answer.result);
`;

async function coldCli(rpcUrl: string, requestFile: string, bareScript: string) {
  const ours = [path.join(ROOT, "bin/facilitator.js"), "verify", requestFile, "--rpc-url", rpcUrl];
  const oursCheck = (stdout: string) => {
    try {
      return (JSON.parse(stdout) as { success?: unknown }).success === true;
    } catch {
      return false;
    }
  };
  const bare = [bareScript, rpcUrl];
  const bareCheck = (stdout: string) => stdout.startsWith("0x");
  // One untimed run of each first: disk cache and node's compile cache, as for any repeated use.
  const oursMs: number[] = [];
  const bareMs: number[] = [];
  const oursErrors: string[] = [];
  const bareErrors: string[] = [];
  const warmOurs = await timedRun([...ours, "-q"], oursCheck);
  const warmBare = await timedRun(bare, bareCheck);
  if (warmOurs.error) oursErrors.push(`warm-up: ${warmOurs.error}`);
  if (warmBare.error) bareErrors.push(`warm-up: ${warmBare.error}`);
  for (let i = 0; i < COLD_RUNS && !interrupting; i++) {
    let o: Timed;
    let b: Timed;
    if (i % 2 === 0) {
      o = await timedRun([...ours, "-q"], oursCheck);
      b = await timedRun(bare, bareCheck);
    } else {
      b = await timedRun(bare, bareCheck);
      o = await timedRun([...ours, "-q"], oursCheck);
    }
    // A failed run says nothing about start-up time: it is counted as an error, not timed.
    if (o.error) oursErrors.push(o.error);
    else oursMs.push(o.ms);
    if (b.error) bareErrors.push(b.error);
    else bareMs.push(b.ms);
  }
  return { oursMs, bareMs, oursErrors, bareErrors };
}

/** Peak RSS of a node process that loads nothing (with `flags`), for the memory note. */
async function idlePeakRssMiB(flags: readonly string[]): Promise<number | undefined> {
  const script =
    "setTimeout(() => { const s = require('node:fs').readFileSync('/proc/self/status', 'utf8');" +
    " console.log(/^VmHWM:\\s+(\\d+) kB/m.exec(s)?.[1] ?? ''); }, 300);";
  let kb: number | undefined;
  const run = await timedRun([...flags, "-e", script], (stdout) => {
    kb = Number(stdout.trim()) || undefined;
    return true;
  });
  return run.error || kb === undefined ? undefined : kb / 1024;
}

// ---------------------------------------------------------------------------------------------
// Report.

interface Row {
  readonly label: string;
  readonly ours: number | undefined;
  readonly reference: number | undefined;
  readonly digits: number;
  readonly errors?: readonly [number, number];
}

const fmt = (value: number | undefined, digits: number) =>
  value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);

function ratio(ours: number | undefined, reference: number | undefined): number | undefined {
  if (ours === undefined || reference === undefined || reference === 0) return undefined;
  return ours / reference;
}

function table(rows: readonly Row[]): string {
  const header = ["", "ours", "reference", "ours/reference", "errors ours/ref"];
  const cells = rows.map((row) => [
    row.label,
    fmt(row.ours, row.digits),
    fmt(row.reference, row.digits),
    fmt(ratio(row.ours, row.reference), 2),
    row.errors && row.errors[0] + row.errors[1] > 0 ? `${row.errors[0]}/${row.errors[1]}` : "",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]?.length ?? 0)));
  const line = (c: readonly string[]) =>
    c
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...cells.map(line)].join("\n");
}

/** The build bin/facilitator.js loads (its `import("../dist/…")`), relative to the root. */
function distEntry(): string {
  const bin = readFileSync(path.join(ROOT, "bin/facilitator.js"), "utf8");
  const match = /import\(\s*["']\.\.\/(dist\/[^"']+)["']\s*\)/.exec(bin);
  return match?.[1] ?? "dist/cli/main.js";
}

/** Newest modification time of the files under `dir` whose names pass `keep`, in ms. */
function newest(dir: string, keep: (name: string) => boolean, depth = 0): number {
  if (depth > 8 || !existsSync(dir)) return 0;
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(full, keep, depth + 1));
    else if (keep(entry.name)) latest = Math.max(latest, statSync(full).mtimeMs);
  }
  return latest;
}

/** Warns when a source file is newer than the build the bench runs. */
function distFreshness(): string | undefined {
  const built = newest(path.join(ROOT, "dist"), (name) => name.endsWith(".js"));
  const source = newest(path.join(ROOT, "src"), (name) => name.endsWith(".ts"));
  return source > built
    ? "a file in src/ is newer than dist/: this measures the last build (npm run build)"
    : undefined;
}

// ---------------------------------------------------------------------------------------------

function devAccount(index: number): DevAccount {
  const account = devAccounts[index];
  if (!account) throw new Error(`no dev account ${index}`);
  return account;
}

async function signBodies(devnet: Devnet, count: number, extra: object = {}): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) =>
      JSON.stringify({
        ...(await signSampleRequest(devnet, {
          payer: devnet.payers[i % devnet.payers.length] as DevAccount,
          amount: AMOUNT,
        })),
        ...extra,
      }),
    ),
  );
}

async function main(): Promise<number> {
  const entry = distEntry();
  if (!existsSync(path.join(ROOT, entry))) {
    console.error(`bench: ${entry} is missing; run \`npm run build\` first`);
    return 2;
  }
  const stale = distFreshness();

  let devnet: Devnet | undefined;
  const servers: Server[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-compare-"));
  let cleaned: Promise<void> | undefined;
  const cleanup = () => {
    cleaned ??= (async () => {
      await Promise.all(servers.map((s) => stopChild(s.child)));
      await Promise.all([...children].map(stopChild));
      await devnet?.stop();
      rmSync(dir, { recursive: true, force: true });
    })();
    return cleaned;
  };
  const interrupted = () => {
    interrupting = true;
    console.error("\nbench: interrupted, stopping everything");
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);

  try {
    const started = performance.now();
    console.log(
      `bench:compare on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), ` +
        `node ${process.version}, ${os.platform()} ${os.release()}`,
    );
    if (stale) console.log(`bench: WARNING ${stale}`);

    const chain = await startDevnet({ port: 0 });
    devnet = chain;
    const oursSigner = devAccount(OURS_SIGNER);
    const referenceSigner = devAccount(REFERENCE_SIGNER);
    const keyFile = path.join(dir, "facilitator.key");
    writeFileSync(keyFile, `${oursSigner.privateKey}\n`, { mode: 0o600 });

    const [ours, reference] = await Promise.all([
      startOurs(chain.rpcUrl, keyFile, path.join(dir, "journal.jsonl")),
      startReference(chain.rpcUrl, referenceSigner.privateKey),
    ]);
    servers.push(ours, reference);
    console.log(`devnet ${chain.network} at ${chain.rpcUrl}`);
    console.log(
      `ours:      ${ours.url} (pid ${ours.pid}) node bin/facilitator.js serve --quiet, ` +
        `signer dev account ${OURS_SIGNER}`,
    );
    console.log(
      `reference: ${reference.url} (pid ${reference.pid}) bench/reference-server.ts under tsx: ` +
        `x402Facilitator + ExactEvmScheme 2.27, toFacilitatorEvmSigner(viem wallet client), ` +
        `privateKeyToAccount(key, { nonceManager }) (the reference's recommended setup for ` +
        `concurrent settles from one key), signer dev account ${REFERENCE_SIGNER}`,
    );

    const signing = performance.now();
    const verifyBodies = await signBodies(chain, POOL);
    const settle = { waitUntil: "confirmed" };
    const oursSettles = await signBodies(chain, SETTLES + 1, settle);
    const referenceSettles = await signBodies(chain, SETTLES + 1, settle);
    const requestFile = path.join(dir, "request.json");
    writeFileSync(requestFile, verifyBodies[0] as string);
    const bareScript = path.join(dir, "bare.mjs");
    writeFileSync(bareScript, BARE_NODE_SCRIPT);
    console.log(
      `signed ${POOL} verify payloads and 2 × ${SETTLES + 1} settle payloads from ` +
        `${chain.payers.length} payers in ${((performance.now() - signing) / 1000).toFixed(1)} s`,
    );

    // Verify.
    const rows: Row[] = [];
    const errorSamples: string[] = [];
    const keep = (what: string, errors: readonly string[]) => {
      for (const e of errors.slice(0, 3)) errorSamples.push(`${what}: ${e}`);
      if (errors.length > 3) errorSamples.push(`${what}: … ${errors.length - 3} more`);
    };
    for (const server of [ours, reference]) {
      const warm = await load(
        `${server.url}/verify`,
        verifyBodies,
        WARMUP_CONCURRENCY,
        WARMUP_REQUESTS,
        SECONDS,
        VERIFY_TIMEOUT_MS,
      );
      keep(`${server.name} verify warm-up`, warm.errors);
    }
    const verifyResults = new Map<number, { ours: Round; reference: Round }>();
    for (const [i, concurrency] of VERIFY_LEVELS.entries()) {
      const order = i % 2 === 0 ? [ours, reference] : [reference, ours];
      const results = new Map<string, Round>();
      for (const server of order) {
        // Opening this level's connections is not what is measured: warm them up first.
        const opening = await load(
          `${server.url}/verify`,
          verifyBodies,
          concurrency,
          2 * concurrency,
          SECONDS,
          VERIFY_TIMEOUT_MS,
        );
        keep(`${server.name} verify c=${concurrency} warm-up`, opening.errors);
        const meter = cpuMeter(server.pid, chain.anvil.pid);
        const loaded = await load(
          `${server.url}/verify`,
          verifyBodies,
          concurrency,
          REQUESTS,
          SECONDS,
          VERIFY_TIMEOUT_MS,
        );
        const round = { ...loaded, cpu: meter() };
        results.set(server.name, round);
        keep(`${server.name} verify c=${concurrency}`, round.errors);
        console.log(
          `verify c=${concurrency} ${server.name.padEnd(9)} ${round.count} requests in ` +
            `${round.seconds.toFixed(2)} s, ${round.errors.length} errors; ` +
            cpuLine(round),
        );
      }
      const o = results.get("ours") as Round;
      const r = results.get("reference") as Round;
      verifyResults.set(concurrency, { ours: o, reference: r });
      const errors = [o.errors.length, r.errors.length] as const;
      rows.push(
        {
          label: `verify c=${concurrency} req/s`,
          ours: o.count / o.seconds,
          reference: r.count / r.seconds,
          digits: 0,
          errors,
        },
        {
          label: `verify c=${concurrency} p50 ms`,
          ours: median(o.latenciesMs),
          reference: median(r.latenciesMs),
          digits: 2,
        },
        {
          label: `verify c=${concurrency} p99 ms`,
          ours: percentile(o.latenciesMs, 99),
          reference: percentile(r.latenciesMs, 99),
          digits: 2,
        },
        {
          label: `verify c=${concurrency} server CPU ms/req`,
          ours: perRequest(o.cpu?.server, o.count),
          reference: perRequest(r.cpu?.server, r.count),
          digits: 2,
        },
      );
    }
    const rssAfterVerify = [peakRssMiB(ours.pid), peakRssMiB(reference.pid)] as const;

    // Settle: ours, then the reference, each with its own fresh payments.
    const settleResults: SettleRun[] = [];
    for (const [server, signer, bodies] of [
      [ours, oursSigner, oursSettles],
      [reference, referenceSigner, referenceSettles],
    ] as const) {
      const run = await settleRun(
        chain,
        server,
        signer.address,
        bodies[0] as string,
        bodies.slice(1),
      );
      settleResults.push(run);
      keep(`${server.name} settle`, run.errors);
      console.log(
        `settle c=${SETTLE_CONCURRENCY} ${server.name.padEnd(9)} ${run.count} settled in ` +
          `${run.seconds.toFixed(2)} s, ${run.errors.length} errors; ${cpuLine(run)}`,
      );
    }
    const [so, sr] = settleResults as [SettleRun, SettleRun];
    const settleErrors = [so.errors.length, sr.errors.length] as const;
    rows.push(
      {
        label: `settle c=${SETTLE_CONCURRENCY} settles/s (1 key)`,
        ours: so.count / so.seconds,
        reference: sr.count / sr.seconds,
        digits: 1,
        errors: settleErrors,
      },
      {
        label: `settle c=${SETTLE_CONCURRENCY} p50 ms`,
        ours: median(so.latenciesMs),
        reference: median(sr.latenciesMs),
        digits: 1,
      },
      {
        label: `settle c=${SETTLE_CONCURRENCY} p99 ms`,
        ours: percentile(so.latenciesMs, 99),
        reference: percentile(sr.latenciesMs, 99),
        digits: 1,
      },
      {
        label: `settle c=${SETTLE_CONCURRENCY} server CPU ms/settle`,
        ours: perRequest(so.cpu?.server, so.count),
        reference: perRequest(sr.cpu?.server, sr.count),
        digits: 2,
      },
    );
    const rssAfterSettle = [peakRssMiB(ours.pid), peakRssMiB(reference.pid)] as const;
    rows.push(
      {
        label: "peak RSS MiB after verify",
        ours: rssAfterVerify[0],
        reference: rssAfterVerify[1],
        digits: 1,
      },
      {
        label: "peak RSS MiB after settle",
        ours: rssAfterSettle[0],
        reference: rssAfterSettle[1],
        digits: 1,
      },
    );

    // The servers are done: stop them so the cold runs have the machine to themselves.
    await Promise.all(servers.map((s) => stopChild(s.child)));

    const cold = await coldCli(chain.rpcUrl, requestFile, bareScript);
    const idleNode = await idlePeakRssMiB([]);
    const idleTsx = await idlePeakRssMiB(["--import", "tsx"]);
    keep("ours cold verify", cold.oursErrors);
    keep("bare node", cold.bareErrors);
    const coldOurs = cold.oursMs.length ? median(cold.oursMs) : undefined;
    const coldBare = cold.bareMs.length ? median(cold.bareMs) : undefined;
    const coldErrors = [cold.oursErrors.length, cold.bareErrors.length] as const;
    rows.push({
      label: `cold verify ms, median of ${COLD_RUNS} (ref = bare node)`,
      ours: coldOurs,
      reference: coldBare,
      digits: 0,
      errors: coldErrors,
    });

    // Report.
    console.log("");
    console.log(table(rows));
    console.log("");
    console.log(
      `verify: up to ${REQUESTS} requests or ${SECONDS} s per level and server, a pool of ${POOL} ` +
        "distinct signed payloads, keep-alive fetch from this process, after 2 × c unmeasured " +
        "requests that open the level's connections; order alternates per level " +
        `(c=1 ours first). Both servers, anvil and this client share the ${os.cpus().length} cores; ` +
        "server CPU ms/req is the server process's user+system time (/proc, 10 ms ticks) per " +
        "request, which does not depend on how the cores are shared.",
    );
    console.log(
      `settle: ${SETTLES} fresh payments per server at concurrency ${SETTLE_CONCURRENCY}, ` +
        `waitUntil confirmed (the reference always waits for the receipt), after one warm-up settle; ` +
        `ours: ${so.checks}; reference: ${sr.checks}`,
    );
    console.log(
      `cold: wall time of \`node bin/facilitator.js verify <file> --rpc-url <rpc> -q\` vs a bare ` +
        `node process doing one eth_chainId with fetch; ${COLD_RUNS} runs each, alternating, after ` +
        `one untimed run of each. ours ${cold.oursMs.map((m) => m.toFixed(0)).join(" ")} ms; ` +
        `bare ${cold.bareMs.map((m) => m.toFixed(0)).join(" ")} ms`,
    );
    console.log(
      "memory: VmHWM from /proc; the reference runs under tsx (node --import tsx), whose loader " +
        `is counted in its RSS: an idle node peaks at ${fmt(idleNode, 1)} MiB here, an idle ` +
        `node --import tsx at ${fmt(idleTsx, 1)} MiB`,
    );

    const c64 = verifyResults.get(64);
    const target = (ok: boolean | undefined, text: string) =>
      `  [${ok === undefined ? " n/a " : ok ? " met " : "UNMET"}] ${text}`;
    const verifyRatio =
      c64 && ratio(c64.ours.count / c64.ours.seconds, c64.reference.count / c64.reference.seconds);
    const oursP99 = c64 && percentile(c64.ours.latenciesMs, 99);
    const refP50 = c64 && median(c64.reference.latenciesMs);
    const settleRatio = ratio(so.count / so.seconds, sr.count / sr.seconds);
    const coldRatio = ratio(coldOurs, coldBare);
    const rss = Math.max(rssAfterVerify[0] ?? 0, rssAfterSettle[0] ?? 0) || undefined;
    console.log("");
    console.log("targets (from the issue):");
    console.log(
      target(
        verifyRatio === undefined ? undefined : verifyRatio >= 3,
        `verify c=64 req/s ≥ 3× reference: ${fmt(verifyRatio, 2)}×`,
      ),
    );
    console.log(
      target(
        oursP99 === undefined || refP50 === undefined ? undefined : oursP99 < refP50,
        `our verify p99 at c=64 below the reference's p50 at c=64: ${fmt(oursP99, 2)} ms vs ${fmt(refP50, 2)} ms`,
      ),
    );
    console.log(
      target(
        settleRatio === undefined ? undefined : settleRatio >= 3,
        `settle from one key ≥ 3× reference: ${fmt(settleRatio, 2)}×`,
      ),
    );
    console.log(
      target(
        coldRatio === undefined ? undefined : coldRatio <= 1.5,
        `cold verify ≤ 1.5× bare node: ${fmt(coldRatio, 2)}×`,
      ),
    );
    console.log(
      target(
        rss === undefined ? undefined : rss < 150,
        `our serve peak RSS < 150 MiB: ${fmt(rss, 1)} MiB`,
      ),
    );

    const problems = [
      ...so.problems.map((p) => `ours settle: exactly-once FAILED: ${p}`),
      ...sr.problems.map((p) => `reference settle: exactly-once FAILED: ${p}`),
    ];
    // keep() records at least one sample for every list of errors that is not empty.
    const anyErrors = errorSamples.length > 0;
    if (anyErrors || problems.length > 0) {
      console.log("");
      for (const sample of errorSamples) console.error(`error ${sample}`);
      for (const problem of problems) console.error(problem);
    } else {
      console.log("");
      console.log("no errors; every settled payment landed exactly once on chain");
    }
    console.log(`bench:compare took ${((performance.now() - started) / 1000).toFixed(0)} s`);
    if (stale) console.log(`bench: WARNING ${stale}`);
    return anyErrors || problems.length > 0 ? 1 : 0;
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    for (const server of servers) {
      const log = server.log().trim();
      if (log) console.error(`${server.name} stderr (tail):\n${log}`);
    }
    return 1;
  } finally {
    await cleanup();
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

process.exitCode = await main();
