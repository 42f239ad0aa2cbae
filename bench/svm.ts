/**
 * Solana beside EVM: verify and settle of `exact` payments through `facilitator serve` (a child
 * process per chain, its state in a temporary directory), measured by the same harness in the
 * same run, printed as one table (throughput per second, latency p50 / p99).
 *
 * - EVM: EIP-3009 `transferWithAuthorization` of the test USDC on the anvil devnet (startDevnet),
 *   one settlement key. anvil mines every transaction the moment it arrives (no block time), so an
 *   EVM `confirmed` settle waits for nothing but the node.
 * - Solana: an SPL TransferChecked of the devnet's test USDC on the local Solana devnet
 *   (src/svm/devnet: litesvm behind a JSON-RPC server answering as Solana devnet), in a process of
 *   its own (bench/svm-devnet.ts) as anvil is; the facilitator's one fee payer signs and pays the
 *   fee. The devnet simulates a cluster's clock, not a cluster: a slot every BENCH_SVM_SLOT_MS
 *   (400 ms, Solana's target); a transaction is executed the moment it is sent, in the current
 *   slot (`processed`), which is `confirmed` once the next slot is produced; a blockhash lives 150
 *   slots (about a minute); no leader, no gossip, no votes, no skipped slots, no contention for
 *   block space. A Solana `confirmed` settle therefore waits up to one slot for the chain and then
 *   for serve's next look at the signature's status (it polls at a fixed interval,
 *   receiptPollMs), which is the floor of its latency here; a real cluster adds network and vote
 *   time.
 *
 * Payments are distinct and signed before timing: EVM by our viem signer (src/evm/devnet/sample.ts),
 * Solana by our signer in the official @x402/svm client's layout (src/svm/devnet/sign-payment.ts).
 * Verify cycles through a pool of payments (verify consumes nothing); each settle run settles
 * fresh payments once each. After every settle run the chain is asked: the payee's balance rose by
 * exactly the settled sum, and the signer sent exactly one transaction per payment (EVM: its
 * nonce; Solana: every answered signature landed without error, and the fee payer's SOL fell by
 * exactly their fees). Exits 1 on any error or failed check.
 *
 *   npm run build && npm run bench:svm
 *   BENCH_SETTLES=500 BENCH_WAIT_UNTIL=confirmed BENCH_SVM_SLOT_MS=100 npm run bench:svm
 *
 * Settings: BENCH_VERIFY_REQUESTS (1000), BENCH_VERIFY_POOL (200), BENCH_VERIFY_CONCURRENCY (16),
 * BENCH_SETTLES (200 per run), BENCH_SETTLE_CONCURRENCY (32), BENCH_WAIT_UNTIL (confirmed,submitted),
 * BENCH_SECONDS (60: the most one phase may take), BENCH_SVM_SLOT_MS (400), BENCH_SVM_PAYERS (8).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPublicClient, type Hex, http } from "viem";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import {
  associatedTokenAddress,
  DEVNET_USDC_MINT,
  SOLANA_DEVNET_NETWORK,
  type SvmDevKey,
  USDC_DECIMALS,
} from "../src/svm/devnet/index.js";
import { devnetKeys } from "../src/svm/devnet/setup.js";
import { type SvmDevnetParts, signSvmSampleRequest } from "../src/svm/devnet/sign-payment.js";
import { cleanEnv, exited, setting, stopChild } from "./lib.js";
import { percentile, postTimed, ROOT, type ServerProcess, startFacilitator } from "./settle-lib.js";

const VERIFY_REQUESTS = Math.floor(setting("BENCH_VERIFY_REQUESTS", 1000));
const VERIFY_POOL = Math.floor(setting("BENCH_VERIFY_POOL", 200));
const VERIFY_CONCURRENCY = Math.floor(setting("BENCH_VERIFY_CONCURRENCY", 16));
const SETTLES = Math.floor(setting("BENCH_SETTLES", 200));
const SETTLE_CONCURRENCY = Math.floor(setting("BENCH_SETTLE_CONCURRENCY", 32));
const PHASE_SECONDS = setting("BENCH_SECONDS", 60);
const SVM_SLOT_MS = setting("BENCH_SVM_SLOT_MS", 400);
const SVM_PAYERS = Math.floor(setting("BENCH_SVM_PAYERS", 8));
const WAIT_UNTIL = (process.env.BENCH_WAIT_UNTIL ?? "confirmed,submitted")
  .split(",")
  .map((w) => w.trim())
  .filter(Boolean);
for (const w of WAIT_UNTIL) {
  if (w !== "confirmed" && w !== "submitted") {
    throw new Error(`BENCH_WAIT_UNTIL takes confirmed and/or submitted, got ${w}`);
  }
}

/** Every payment pays 0.01 USDC (6 decimals on both chains). */
const AMOUNT = 10_000n;
const WARMUP_VERIFIES = 32;
const WARMUP_SETTLES = 4;
/** How long landed transactions get to reach `confirmed` before the checks read the chain. */
const SETTLE_WAIT_MS = 15_000;

// ---------------------------------------------------------------------------------------------
// The harness: the same for both chains.

interface Answered {
  readonly latencyMs: number;
  readonly hash?: string | undefined;
  readonly error?: string | undefined;
}

interface Phase {
  readonly chain: string;
  readonly op: string;
  readonly concurrency: number;
  readonly answers: Answered[];
  readonly seconds: number;
  readonly checks: string[];
  readonly problems: string[];
}

const post = (url: string, body: string): Promise<Answered> => postTimed(url, body);

/**
 * Sends `total` requests (body i is bodies[i % bodies.length]) to `url`, `concurrency` at a time,
 * until all are answered or PHASE_SECONDS pass; requests not sent by then count as errors.
 */
async function drive(url: string, bodies: readonly string[], total: number, concurrency: number) {
  const answers: Answered[] = [];
  const deadline = performance.now() + PHASE_SECONDS * 1000;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < total && performance.now() < deadline) {
      const body = bodies[next % bodies.length] as string;
      next += 1;
      answers.push(await post(url, body));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  const seconds = (performance.now() - started) / 1000;
  for (let i = next; i < total; i++) {
    answers.push({ latencyMs: 0, error: `not sent within ${PHASE_SECONDS} s` });
  }
  return { answers, seconds };
}

/** One chain as the harness sees it: a serve URL, a signer of payments, and the chain's checks. */
interface Side {
  readonly name: string;
  readonly serve: ServerProcess;
  /** `count` distinct request bodies (reference dialect), signed now. */
  sign(count: number, waitUntil?: string): Promise<string[]>;
  /** Reads what the checks compare, before a settle run. */
  snapshot(): Promise<unknown>;
  /** After a settle run: did every answered payment land exactly once? */
  check(
    before: unknown,
    answers: readonly Answered[],
  ): Promise<{ checks: string[]; problems: string[] }>;
}

/** One line for a warm-up's failures, if any: how many, and the first. */
function warmupProblems(answers: readonly Answered[]): string[] {
  const errors = answers.flatMap((a) => (a.error ? [a.error] : []));
  if (errors.length === 0) return [];
  return [`warm-up: ${errors.length} of ${answers.length} failed; the first: ${errors[0]}`];
}

async function verifyPhase(side: Side): Promise<Phase> {
  const bodies = await side.sign(VERIFY_POOL);
  const url = `${side.serve.url}/verify`;
  const warmup = await drive(url, bodies, WARMUP_VERIFIES, VERIFY_CONCURRENCY);
  const { answers, seconds } = await drive(url, bodies, VERIFY_REQUESTS, VERIFY_CONCURRENCY);
  return {
    chain: side.name,
    op: "verify",
    concurrency: VERIFY_CONCURRENCY,
    answers,
    seconds,
    checks: [],
    problems: warmupProblems(warmup.answers),
  };
}

async function settlePhase(side: Side, waitUntil: string): Promise<Phase> {
  const url = `${side.serve.url}/settle`;
  // Warm-up (not counted): the server learns its RPC, the signer its lane.
  const warmup = await drive(url, await side.sign(WARMUP_SETTLES, waitUntil), WARMUP_SETTLES, 4);
  const bodies = await side.sign(SETTLES, waitUntil);
  const before = await side.snapshot();
  const { answers, seconds } = await drive(url, bodies, SETTLES, SETTLE_CONCURRENCY);
  const { checks, problems } = await side.check(before, answers);
  const hashes = answers.flatMap((a) => (a.hash ? [a.hash] : []));
  if (new Set(hashes).size !== hashes.length) {
    problems.push("the same transaction was answered for two payments");
  }
  return {
    chain: side.name,
    op: `settle ${waitUntil}`,
    concurrency: SETTLE_CONCURRENCY,
    answers,
    seconds,
    checks,
    problems: [...warmupProblems(warmup.answers), ...problems],
  };
}

// ---------------------------------------------------------------------------------------------
// EVM: anvil.

async function evmSide(chain: Devnet, serve: ServerProcess): Promise<Side> {
  const rpc = createPublicClient({ transport: http(chain.rpcUrl, { retryCount: 0 }) });
  const payee = () =>
    rpc.readContract({
      address: chain.token.address,
      abi: testUsdcAbi,
      functionName: "balanceOf",
      args: [chain.payee.address],
    });
  const sent = () => rpc.getTransactionCount({ address: chain.facilitator.address });
  return {
    name: "EVM (anvil)",
    serve,
    sign: (count, waitUntil) =>
      Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const payer = chain.payers[i % chain.payers.length] as DevAccount;
          const body = await signSampleRequest(chain, { payer, amount: AMOUNT });
          return JSON.stringify(waitUntil ? { ...body, waitUntil } : body);
        }),
      ),
    snapshot: async () => ({ payee: await payee(), sent: await sent() }),
    async check(before, answers) {
      const start = before as { payee: bigint; sent: number };
      const hashes = answers.flatMap((a) => (a.hash ? [a.hash as Hex] : []));
      // submitted answers before the receipt: wait for every one first.
      const receipts = await Promise.all(
        hashes.map((hash) =>
          rpc.waitForTransactionReceipt({ hash, timeout: SETTLE_WAIT_MS }).catch(() => undefined),
        ),
      );
      const reverted = receipts.filter((r) => r?.status !== "success").length;
      const payeeDelta = (await payee()) - start.payee;
      const sentDelta = (await sent()) - start.sent;
      const expected = BigInt(hashes.length) * AMOUNT;
      const checks = [
        `payee +${payeeDelta} (expected ${expected} = ${hashes.length} × ${AMOUNT})`,
        `transactions sent ${sentDelta} (expected ${hashes.length})`,
      ];
      const problems: string[] = [];
      if (payeeDelta !== expected) problems.push(`payee delta: ${checks[0]}`);
      if (sentDelta !== hashes.length) problems.push(`transaction count: ${checks[1]}`);
      if (reverted > 0)
        problems.push(`${reverted} answered transactions without a successful receipt`);
      return { checks, problems };
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Solana: the local devnet in its own process.

async function svmRpc<T>(rpcUrl: string, method: string, params: unknown[]): Promise<T> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: T; error?: { message: string } };
  if (body.error || body.result === undefined) {
    throw new Error(`${method}: ${body.error?.message ?? "no result"}`);
  }
  return body.result;
}

/** Starts bench/svm-devnet.ts and resolves with its RPC URL. */
function startSvmDevnetProcess(): { child: ChildProcess; ready: Promise<string> } {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", path.join(ROOT, "bench/svm-devnet.ts")],
    {
      cwd: ROOT,
      env: {
        ...cleanEnv(),
        BENCH_SVM_SLOT_MS: String(SVM_SLOT_MS),
        BENCH_SVM_PAYERS: String(SVM_PAYERS),
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  let err = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    err = (err + chunk).slice(-4_000);
  });
  const ready = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the Solana devnet did not start: ${err}`)),
      30_000,
    );
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => {
      out += chunk;
      const line = out.split("\n")[0];
      if (out.includes("\n") && line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { rpcUrl: string }).rpcUrl);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the Solana devnet exited (${code}): ${err}`));
    });
  });
  return { child, ready };
}

async function svmSide(
  devnet: SvmDevnetParts & { payers: SvmDevKey[] },
  serve: ServerProcess,
): Promise<Side> {
  const payeeAta = await associatedTokenAddress(devnet.payee.address);
  const payee = async () =>
    BigInt(
      (
        await svmRpc<{ value: { amount: string } }>(devnet.rpcUrl, "getTokenAccountBalance", [
          payeeAta,
          { commitment: "confirmed" },
        ])
      ).value.amount,
    );
  const feePayerSol = async () =>
    BigInt(
      (
        await svmRpc<{ value: number }>(devnet.rpcUrl, "getBalance", [
          devnet.feePayer.address,
          { commitment: "confirmed" },
        ])
      ).value,
    );
  type Status = { confirmationStatus?: string; err: unknown } | null;
  const statuses = async (signatures: readonly string[]) => {
    const all: Status[] = [];
    for (let i = 0; i < signatures.length; i += 256) {
      const { value } = await svmRpc<{ value: Status[] }>(devnet.rpcUrl, "getSignatureStatuses", [
        signatures.slice(i, i + 256),
      ]);
      all.push(...value);
    }
    return all;
  };
  const isConfirmed = (s: Status) =>
    s?.confirmationStatus === "confirmed" || s?.confirmationStatus === "finalized";
  return {
    name: "Solana (devnet)",
    serve,
    sign: (count, waitUntil) =>
      Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const payer = devnet.payers[i % devnet.payers.length] as SvmDevKey;
          const body = await signSvmSampleRequest(devnet, payer, { amount: AMOUNT });
          return JSON.stringify(waitUntil ? { ...body, waitUntil } : body);
        }),
      ),
    snapshot: async () => ({ payee: await payee(), sol: await feePayerSol() }),
    async check(before, answers) {
      const start = before as { payee: bigint; sol: bigint };
      const signatures = answers.flatMap((a) => (a.hash ? [a.hash] : []));
      // submitted answers before `confirmed`: give every signature time to get there.
      let seen = await statuses(signatures);
      const until = Date.now() + SETTLE_WAIT_MS;
      while (!seen.every(isConfirmed) && Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, SVM_SLOT_MS));
        seen = await statuses(signatures);
      }
      const unconfirmed = seen.filter((s) => !isConfirmed(s)).length;
      const failed = seen.filter((s) => s && s.err !== null).length;
      // A wait of one more slot: balances below are read at `confirmed` too.
      await new Promise((resolve) => setTimeout(resolve, 2 * SVM_SLOT_MS));
      let fees = 0n;
      for (const signature of signatures) {
        const landed = await svmRpc<{ meta: { fee: number } } | null>(
          devnet.rpcUrl,
          "getTransaction",
          [
            signature,
            { commitment: "confirmed", encoding: "base64", maxSupportedTransactionVersion: 0 },
          ],
        ).catch(() => null);
        fees += BigInt(landed?.meta.fee ?? 0);
      }
      const payeeDelta = (await payee()) - start.payee;
      const solDelta = start.sol - (await feePayerSol());
      const expected = BigInt(signatures.length) * AMOUNT;
      const checks = [
        `payee +${payeeDelta} (expected ${expected} = ${signatures.length} × ${AMOUNT})`,
        `signatures confirmed ${signatures.length - unconfirmed}/${signatures.length}, failed ${failed}`,
        `fee payer −${solDelta} lamports (expected the ${signatures.length} transactions' fees, ${fees})`,
      ];
      const problems: string[] = [];
      if (payeeDelta !== expected) problems.push(`payee delta: ${checks[0]}`);
      if (unconfirmed > 0 || failed > 0) problems.push(`signatures: ${checks[1]}`);
      if (solDelta !== fees) problems.push(`fee payer: ${checks[2]}`);
      return { checks, problems };
    },
  };
}

// ---------------------------------------------------------------------------------------------

function table(phases: readonly Phase[]): string {
  const header = [
    "chain",
    "op",
    "conc",
    "requests",
    "ok",
    "seconds",
    "per s",
    "p50 ms",
    "p99 ms",
    "errors",
  ];
  const rows = phases.map((p) => {
    const ok = p.answers.filter((a) => !a.error);
    const sorted = ok.map((a) => a.latencyMs).sort((a, b) => a - b);
    return [
      p.chain,
      p.op,
      String(p.concurrency),
      String(p.answers.length),
      String(ok.length),
      p.seconds.toFixed(2),
      (ok.length / p.seconds).toFixed(1),
      percentile(sorted, 50).toFixed(1),
      percentile(sorted, 99).toFixed(1),
      String(p.answers.length - ok.length),
    ];
  });
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i < 2 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ");
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

async function main(): Promise<number> {
  if (!existsSync(path.join(ROOT, "dist/main.js"))) {
    console.error("bench: dist/ is missing; run `npm run build` first");
    return 2;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-svm-"));
  const children: ChildProcess[] = [];
  let anvil: Devnet | undefined;
  let cleaned: Promise<void> | undefined;
  const cleanup = () => {
    cleaned ??= (async () => {
      for (const child of children.reverse()) await stopChild(child);
      await anvil?.stop();
      rmSync(dir, { recursive: true, force: true });
    })();
    return cleaned;
  };
  const interrupted = () => {
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);

  /** serve for one chain: a clean environment, its own journal and state directory. */
  const serve = async (name: string, rpcUrl: string, env: Record<string, string>) => {
    const started = startFacilitator(
      [
        "--rpc-url",
        rpcUrl,
        "--journal",
        path.join(dir, `${name}-journal.jsonl`),
        "--confirm-timeout",
        "60",
      ],
      { XDG_STATE_HOME: path.join(dir, `${name}-state`), ...env },
    );
    children.push(started.child);
    return started.ready;
  };

  const phases: Phase[] = [];
  try {
    const svmProcess = startSvmDevnetProcess();
    children.push(svmProcess.child);
    const [chain, svmRpcUrl] = await Promise.all([startDevnet({ port: 0 }), svmProcess.ready]);
    anvil = chain;
    const keys = devnetKeys(SVM_PAYERS);
    const svmDevnet = {
      rpcUrl: svmRpcUrl,
      network: SOLANA_DEVNET_NETWORK,
      feePayer: keys.feePayer,
      payee: keys.payee,
      payers: keys.payers,
      mint: { address: DEVNET_USDC_MINT, decimals: USDC_DECIMALS },
    };
    const [evmServe, svmServe] = await Promise.all([
      serve("evm", chain.rpcUrl, { FACILITATOR_PRIVATE_KEY: chain.facilitator.privateKey }),
      serve("svm", svmRpcUrl, { FACILITATOR_SVM_PRIVATE_KEY: keys.feePayer.secretKey }),
    ]);
    const sides = [await evmSide(chain, evmServe), await svmSide(svmDevnet, svmServe)];

    console.log(
      `bench: exact payments through facilitator serve, EVM (EIP-3009, anvil ${chain.network}) ` +
        `beside Solana (SPL, devnet ${SOLANA_DEVNET_NETWORK}, a slot every ${SVM_SLOT_MS} ms); ` +
        `node ${process.version}`,
    );
    console.log(
      `bench: verify ${VERIFY_REQUESTS} requests over ${VERIFY_POOL} distinct payments at ` +
        `concurrency ${VERIFY_CONCURRENCY}; settle ${SETTLES} distinct payments per run at ` +
        `concurrency ${SETTLE_CONCURRENCY}, waitUntil ${WAIT_UNTIL.join(", ")}`,
    );
    for (const side of sides) phases.push(await verifyPhase(side));
    for (const waitUntil of WAIT_UNTIL) {
      for (const side of sides) phases.push(await settlePhase(side, waitUntil));
    }
    for (const side of sides) {
      if (exited(side.serve.child)) {
        phases.at(-1)?.problems.push(`${side.name}: serve exited early:\n${side.serve.stderr()}`);
      }
    }
  } catch (error) {
    console.error(`bench: ${error instanceof Error ? error.message : String(error)}`);
    await cleanup();
    return 1;
  } finally {
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
  await cleanup();

  console.log("");
  console.log(table(phases));
  console.log("");
  let failed = false;
  for (const p of phases) {
    if (p.checks.length > 0) console.log(`${p.chain} ${p.op}: ${p.checks.join("; ")}`);
  }
  for (const p of phases) {
    const errors = p.answers.flatMap((a) => (a.error ? [a.error] : []));
    for (const problem of p.problems) console.error(`${p.chain} ${p.op}: FAILED ${problem}`);
    for (const error of errors.slice(0, 3)) console.error(`${p.chain} ${p.op}: error ${error}`);
    if (errors.length > 3) console.error(`${p.chain} ${p.op}: … ${errors.length - 3} more errors`);
    failed ||= p.problems.length > 0 || errors.length > 0;
  }
  if (!failed) console.log("every verify succeeded; every settled payment landed exactly once");
  return failed ? 1 : 0;
}

process.exitCode = await main();
