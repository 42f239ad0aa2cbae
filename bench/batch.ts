/**
 * batch-settlement against `exact`, ours beside the official x402 facilitator (@x402/core +
 * @x402/evm 2.27), on one devnet:
 *
 * 1. Gas per paid request at N vouchers per channel (1, 10, 50, 500), K channels (10 payers, each
 *    its own channel to the payee): each payer's first payment is the official client's deposit
 *    (EIP-3009 collector; again with the Permit2 collector, the payer having approved Permit2
 *    before, not counted) carrying the first voucher, verified then settled; N-1 more vouchers are
 *    verified (no transaction); then one claim of all K channels' latest vouchers (signed by the
 *    receiver authorizer the facilitator holds) and one settle (sweep) to the payee. Gas from the
 *    receipts: (K deposits + claim + settle) / (K × N), beside one `exact` EIP-3009 transfer
 *    measured on the same devnet. The payee has been paid and has claimed and settled before
 *    (a warm-up, not counted), as a seller in business has.
 * 2. Paid requests per second through `serve` (a child process): a voucher (POST /verify of a
 *    fresh voucher, cumulative amounts rising over many funded channels; a voucher is never
 *    settled by itself) against an `exact` EIP-3009 payment (POST /verify, then POST /settle with
 *    waitUntil confirmed, as the x402 middleware does before it answers), at concurrency 16 and
 *    64; the same for the official facilitator behind a minimal node:http server.
 *
 * Each server reaches anvil through its own counting JSON-RPC proxy, so the rate table says how
 * many RPC calls a request cost. Prints markdown tables; exits 1 if any request that should have
 * succeeded failed, or a balance on chain is not what the requests moved.
 *
 *   npm run build && npm run bench:batch
 *   BENCH_BATCH_N=1,50 BENCH_BATCH_VOUCHERS=1000 npm run bench:batch
 *
 * Settings (environment): BENCH_BATCH_N (vouchers per channel, "1,10,50,500"),
 * BENCH_BATCH_CHANNELS (K, 10), BENCH_BATCH_PERMIT2 (0: EIP-3009 deposits only),
 * BENCH_BATCH_RATE_CHANNELS (funded channels the voucher rate runs over, 64), BENCH_BATCH_VOUCHERS
 * (voucher verifies per level and server, 3000), BENCH_BATCH_EXACT (exact paid requests per level
 * and server, 600),
 * BENCH_BATCH_CONCURRENCY ("16,64"), BENCH_BATCH_SECONDS (time bound per level, 20).
 */
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createTestClient, erc20Abi, type Hex, http, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  devAccounts,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { batchedCall, mintCall, runSetupCalls } from "../src/evm/devnet/setup.js";
import {
  actionPayment,
  batchRequirements,
  type Channel,
  claimRow,
  inParallel,
  type Json,
  type Level,
  markdownTable,
  type Outcome,
  openPayment,
  PRICE,
  percentile,
  reader,
  rpcProxy,
  runLevel,
  runOfficialServer,
  settleAt,
  startOfficial,
  startOurs,
  type Target,
  verifyAt,
  x402Body,
} from "./batch-lib.js";
import { cleanEnv, exited, setting, stopChild } from "./lib.js";
import { ROOT } from "./settle-lib.js";

/** A list of positive integers from the environment ("1,10,50"), or the fallback. */
function listSetting(name: string, fallback: readonly number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return [...fallback];
  const values = raw.split(",").map((part) => Number(part.trim()));
  if (values.length === 0 || values.some((v) => !Number.isInteger(v) || v <= 0)) {
    throw new Error(`${name} must be a comma-separated list of positive integers, got ${raw}`);
  }
  return values;
}

const NS = listSetting("BENCH_BATCH_N", [1, 10, 50, 500]);
const K = Math.floor(setting("BENCH_BATCH_CHANNELS", 10));
const PERMIT2 = process.env.BENCH_BATCH_PERMIT2 !== "0";
const RATE_CHANNELS = Math.floor(setting("BENCH_BATCH_RATE_CHANNELS", 64));
const VOUCHERS = Math.floor(setting("BENCH_BATCH_VOUCHERS", 3000));
const EXACT = Math.floor(setting("BENCH_BATCH_EXACT", 600));
const CONCURRENCY = listSetting("BENCH_BATCH_CONCURRENCY", [16, 64]);
const SECONDS = setting("BENCH_BATCH_SECONDS", 20);

/** An exact payment: signSampleRequest's default, 0.01 test USDC. */
const EXACT_AMOUNT = 10_000n;
/** What each voucher-rate channel holds: enough for every voucher the levels sign. */
const RATE_DEPOSIT = 100_000_000n;
/** The 10,000 USDC each fresh payer gets. */
const PAYER_MINT = 10_000n * 10n ** 6n;
/** Setup mints per multicall transaction. */
const MINTS_PER_TX = 50;
const EXACT_GAS_HINT = 68_700n;

type Method = "eip3009" | "permit2";

// ---------------------------------------------------------------------------------------------
// What the bench keeps.

const failures: string[] = [];
function fail(where: string, what: string): void {
  failures.push(`${where}: ${what}`);
}
function check(where: string, outcomes: readonly Outcome[]): void {
  for (const outcome of outcomes) if (!outcome.ok) fail(where, outcome.error ?? "failed");
}

interface GasRound {
  readonly facilitator: Target["name"];
  readonly method: Method;
  readonly n: number;
  readonly k: number;
  readonly deposits: readonly bigint[];
  readonly claim: bigint;
  readonly settle: bigint;
}

interface RateRow {
  readonly kind: string;
  readonly facilitator: Target["name"];
  readonly concurrency: number;
  readonly level: Level;
}

const log = (line: string) => console.log(`bench: ${line}`);

function freshPayer(): DevAccount {
  const privateKey = generatePrivateKey();
  const account = { address: privateKeyToAccount(privateKey).address, privateKey };
  // Test keys of this run only; still never printed.
  const redacted = () => ({ address: account.address, privateKey: "<redacted>" });
  Object.defineProperty(account, "toJSON", { value: redacted });
  Object.defineProperty(account, Symbol.for("nodejs.util.inspect.custom"), { value: redacted });
  return account;
}

async function gasUsed(chain: Devnet, hash: Hex, where: string): Promise<bigint> {
  const receipt = await reader(chain).getTransactionReceipt({ hash });
  if (receipt.status !== "success") fail(where, `transaction ${hash} reverted`);
  return receipt.gasUsed;
}

const tokenBalance = (chain: Devnet, who: `0x${string}`) =>
  reader(chain).readContract({
    address: chain.token.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });

async function channelTotals(chain: Devnet, id: Hex) {
  const [balance, totalClaimed] = await reader(chain).readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "channels",
    args: [id],
  });
  return { balance, totalClaimed };
}

function requirementsFor(chain: Devnet, authorizer: DevAccount, method: Method): Json {
  const accepted = batchRequirements(chain, authorizer.address);
  if (method === "permit2") accepted.extra.assetTransferMethod = "permit2";
  return accepted;
}

/** Each payer's deposit (verify, then settle), `concurrency` at a time: the opened channels. */
async function openChannels(
  chain: Devnet,
  target: Target,
  payers: readonly DevAccount[],
  accepted: Json,
  deposit: bigint,
  concurrency: number,
  where: string,
): Promise<{ channels: Channel[]; hashes: Hex[] }> {
  const opened = await Promise.all(
    payers.map((payer) => openPayment(chain, payer, accepted, deposit)),
  );
  const outcomes = await inParallel(opened, concurrency, async ({ payment }) => {
    const body = x402Body(payment, accepted);
    const verified = await verifyAt(target, body);
    if (!verified.ok) return { ...verified, error: `deposit verify: ${verified.error}` };
    const settled = await settleAt(target, body);
    return settled.ok ? settled : { ...settled, error: `deposit settle: ${settled.error}` };
  });
  check(where, outcomes);
  return {
    channels: opened.filter((_, i) => outcomes[i]?.ok).map((o) => o.channel),
    hashes: outcomes.flatMap((o) => (o.hash ? [o.hash] : [])),
  };
}

/** Claims every channel's latest voucher in one request, then sweeps the payee's claims. */
async function claimAndSettle(
  chain: Devnet,
  target: Target,
  channels: readonly Channel[],
  accepted: Json,
  where: string,
): Promise<{ claim?: Hex; settle?: Hex }> {
  const claim = await settleAt(
    target,
    x402Body(actionPayment(accepted, { type: "claim", claims: channels.map(claimRow) }), accepted),
  );
  if (!claim.ok) {
    fail(where, `claim: ${claim.error}`);
    return {};
  }
  for (const channel of channels) {
    const { totalClaimed } = await channelTotals(chain, channel.id);
    if (totalClaimed !== channel.latest.amount) {
      fail(
        where,
        `channel ${channel.id} claimed ${totalClaimed}, expected ${channel.latest.amount}`,
      );
    }
  }
  const before = await tokenBalance(chain, chain.payee.address);
  const sweep = await settleAt(
    target,
    x402Body(
      actionPayment(accepted, {
        type: "settle",
        receiver: chain.payee.address,
        token: chain.token.address,
      }),
      accepted,
    ),
  );
  if (!sweep.ok) {
    fail(where, `settle: ${sweep.error}`);
    return { claim: claim.hash };
  }
  const moved = (await tokenBalance(chain, chain.payee.address)) - before;
  const expected = channels.reduce((sum, c) => sum + c.latest.amount, 0n);
  if (moved !== expected) fail(where, `the payee got ${moved}, expected ${expected}`);
  return { claim: claim.hash, settle: sweep.hash };
}

/** One gas round: K channels, N vouchers each, one claim, one settle. */
async function gasRound(
  chain: Devnet,
  target: Target,
  authorizer: DevAccount,
  payers: readonly DevAccount[],
  n: number,
  method: Method,
): Promise<GasRound | undefined> {
  const where = `gas ${target.name} ${method} N=${n}`;
  const accepted = requirementsFor(chain, authorizer, method);
  const failed = failures.length;
  const { channels, hashes } = await openChannels(
    chain,
    target,
    payers,
    accepted,
    BigInt(n) * PRICE,
    payers.length,
    where,
  );
  // N-1 more vouchers per channel, each channel's in order, all channels at once.
  await Promise.all(
    channels.map(async (channel) => {
      for (let i = 2; i <= n; i++) {
        const payment = await channel.sign(BigInt(i) * PRICE);
        const verified = await verifyAt(target, x402Body(payment, accepted));
        if (!verified.ok) {
          fail(where, `voucher ${i}: ${verified.error}`);
          return;
        }
      }
    }),
  );
  const sent = await claimAndSettle(chain, target, channels, accepted, where);
  if (failures.length > failed || !sent.claim || !sent.settle) return undefined;
  return {
    facilitator: target.name,
    method,
    n,
    k: channels.length,
    deposits: await Promise.all(hashes.map((h) => gasUsed(chain, h, where))),
    claim: await gasUsed(chain, sent.claim, where),
    settle: await gasUsed(chain, sent.settle, where),
  };
}

/** One exact payment (verify, then settle confirmed): its transaction's gas. */
async function exactGas(chain: Devnet, target: Target, payer: DevAccount) {
  const where = `exact gas ${target.name}`;
  const body = JSON.stringify({
    ...(await signSampleRequest(chain, { payer, amount: EXACT_AMOUNT, dialect: "x402" })),
    waitUntil: "confirmed",
  });
  const verified = await verifyAt(target, body);
  if (!verified.ok) return fail(where, `verify: ${verified.error}`);
  const settled = await settleAt(target, body);
  if (!settled.ok || !settled.hash) return fail(where, `settle: ${settled.error}`);
  return gasUsed(chain, settled.hash, where);
}

// ---------------------------------------------------------------------------------------------
// Rates.

/** Splits jobs over `concurrency` workers, round-robin. */
function deal<T>(items: readonly T[], concurrency: number): T[][] {
  const queues: T[][] = Array.from({ length: concurrency }, () => []);
  items.forEach((item, i) => {
    queues[i % concurrency]?.push(item);
  });
  return queues;
}

/**
 * Voucher bodies for one level: per channel, `perChannel` vouchers with rising cumulative
 * amounts, continuing where the last level stopped.
 */
async function voucherBodies(
  channels: readonly Channel[],
  perChannel: number,
  accepted: Json,
): Promise<string[][]> {
  const bodies: string[][] = [];
  for (const channel of channels) {
    const mine: string[] = [];
    for (let j = 0; j < perChannel; j++) {
      mine.push(x402Body(await channel.sign(channel.latest.amount + PRICE), accepted));
    }
    bodies.push(mine);
  }
  return bodies;
}

/**
 * A voucher level: worker w owns channels w, w+c, …, and verifies their vouchers in order, one
 * channel after the other (so each channel's amounts rise); the first voucher of every channel
 * opens the connections and is not counted.
 */
async function voucherLevel(
  target: Target,
  bodies: readonly string[][],
  concurrency: number,
): Promise<Level> {
  const warm = await inParallel(bodies, concurrency, (mine) => verifyAt(target, mine[0] as string));
  check(`${target.name} voucher warm-up`, warm);
  const queues = Array.from({ length: concurrency }, (_, w) => {
    const owned = bodies.filter((_, i) => i % concurrency === w);
    const jobs: (() => Promise<Outcome>)[] = [];
    const rounds = Math.max(...owned.map((mine) => mine.length), 0);
    for (let j = 1; j < rounds; j++) {
      for (const mine of owned) {
        const body = mine[j];
        if (body) jobs.push(() => verifyAt(target, body));
      }
    }
    return jobs;
  });
  return runLevel(target, queues, SECONDS);
}

/**
 * An exact level: fresh payments, each verified then settled (confirmed); then the payee's
 * balance must have grown by exactly the payments answered as settled.
 */
async function exactLevel(chain: Devnet, target: Target, concurrency: number): Promise<Level> {
  const bodies = await Promise.all(
    Array.from({ length: EXACT }, async (_, i) =>
      JSON.stringify({
        ...(await signSampleRequest(chain, {
          payer: chain.payers[i % chain.payers.length] as DevAccount,
          amount: EXACT_AMOUNT,
          dialect: "x402",
        })),
        waitUntil: "confirmed",
      }),
    ),
  );
  const jobs = bodies.map((body) => async (): Promise<Outcome> => {
    const verified = await verifyAt(target, body);
    if (!verified.ok) return { ...verified, error: `verify: ${verified.error}` };
    const settled = await settleAt(target, body);
    return settled.ok
      ? { ...settled, ms: verified.ms + settled.ms }
      : { ...settled, error: `settle: ${settled.error}` };
  });
  const before = await tokenBalance(chain, chain.payee.address);
  const level = await runLevel(target, deal(jobs, concurrency), SECONDS);
  const moved = (await tokenBalance(chain, chain.payee.address)) - before;
  const expected = BigInt(level.latenciesMs.length) * EXACT_AMOUNT;
  if (moved !== expected) {
    fail(`exact ${target.name} c=${concurrency}`, `the payee got ${moved}, expected ${expected}`);
  }
  return level;
}

// ---------------------------------------------------------------------------------------------
// Report.

const int = (value: bigint | number) => Math.round(Number(value)).toLocaleString("en-US");
const fixed = (value: number | undefined, digits: number) =>
  value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);

function gasTable(rounds: readonly GasRound[], exact: Map<string, bigint>): string {
  const reference = exact.get("ours") ?? EXACT_GAS_HINT;
  const rows = rounds.map((r) => {
    const deposits = r.deposits.reduce((a, b) => a + b, 0n);
    const requests = BigInt(r.k * r.n);
    const total = deposits + r.claim + r.settle;
    const share = (gas: bigint) => int(Number(gas) / Number(requests));
    return [
      `${r.n}`,
      `${r.facilitator}${r.method === "permit2" ? " (Permit2)" : ""}`,
      int(Number(deposits) / r.deposits.length),
      int(r.claim),
      int(r.settle),
      share(deposits),
      share(r.claim),
      share(r.settle),
      share(total),
      `${((100 * Number(total)) / Number(requests) / Number(reference)).toFixed(1)} %`,
    ];
  });
  for (const [name, gas] of exact) {
    rows.push([
      "exact",
      name,
      "",
      "",
      "",
      "",
      "",
      "",
      int(gas),
      `${((100 * Number(gas)) / Number(reference)).toFixed(1)} %`,
    ]);
  }
  return markdownTable(
    [
      "vouchers per channel (N)",
      "facilitator",
      "deposit gas, each",
      `claim gas (${K} channels)`,
      "settle gas",
      "deposit share",
      "claim share",
      "settle share",
      "gas per paid request",
      "of an exact transfer",
    ],
    rows,
  );
}

function rateTable(rows: readonly RateRow[]): string {
  return markdownTable(
    [
      "paid request",
      "facilitator",
      "concurrency",
      "requests",
      "per second",
      "p50 ms",
      "p99 ms",
      "server CPU ms/req",
      "RPC calls/req",
      "errors",
    ],
    rows.map(({ kind, facilitator, concurrency, level }) => [
      kind,
      facilitator,
      String(concurrency),
      String(level.count),
      fixed(level.latenciesMs.length / level.seconds, 0),
      fixed(percentile(level.latenciesMs, 50), 1),
      fixed(percentile(level.latenciesMs, 99), 1),
      fixed(level.cpuPerRequest, 2),
      fixed(level.rpcPerRequest, 2),
      String(level.errors.length + level.notSent),
    ]),
  );
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const started = performance.now();
  if (!existsSync(path.join(ROOT, "dist/main.js"))) {
    console.error("bench: dist/ is missing; run `npm run build` first");
    return 2;
  }
  if (RATE_CHANNELS < Math.max(...CONCURRENCY)) {
    console.error("bench: BENCH_BATCH_RATE_CHANNELS must be at least the highest concurrency");
    return 2;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-batch-"));
  let chain: Devnet | undefined;
  const targets: Target[] = [];
  const proxies: Awaited<ReturnType<typeof rpcProxy>>[] = [];
  const cleanup = async () => {
    await Promise.all(targets.map((t) => stopChild(t.child)));
    await Promise.all(proxies.map((p) => p.close()));
    await chain?.stop();
    rmSync(dir, { recursive: true, force: true });
    // The settlement-key locks of this run's serve (lib.ts puts them under the temp directory).
    const locks = cleanEnv().FACILITATOR_LOCK_DIR;
    if (locks) rmSync(locks, { recursive: true, force: true });
  };
  const interrupted = () => {
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    chain = await startDevnet({ port: 0 });
    const devnet = chain;
    const authorizer = devAccounts[7] as DevAccount;
    const relayer = freshPayer();
    const methods: Method[] = PERMIT2 ? ["eip3009", "permit2"] : ["eip3009"];

    // Accounts: one fresh payer per channel of every round, the rate channels, the warm-up.
    const roundPayers = new Map<string, DevAccount[]>();
    for (const method of methods) {
      for (const n of NS) {
        for (const name of ["ours", "official"]) {
          roundPayers.set(`${name} ${method} ${n}`, Array.from({ length: K }, freshPayer));
        }
      }
    }
    const ratePayers = Array.from({ length: RATE_CHANNELS }, freshPayer);
    const warmPayer = freshPayer();
    const everyone = [...[...roundPayers.values()].flat(), ...ratePayers, warmPayer];
    const mints = everyone.map((p) => mintCall(devnet.token.address, p.address, PAYER_MINT));
    const calls = [];
    for (let i = 0; i < mints.length; i += MINTS_PER_TX) {
      calls.push(batchedCall(mints.slice(i, i + MINTS_PER_TX)));
    }
    await runSetupCalls(devnet.rpcUrl, devnet.chainId, calls, devnet.anvil.mining);
    const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    await anvil.setBalance({ address: relayer.address, value: parseEther("1000") });
    if (PERMIT2) {
      const permit2Payers = [...roundPayers.entries()]
        .filter(([key]) => key.includes("permit2"))
        .flatMap(([, payers]) => payers);
      for (const payer of permit2Payers) {
        await anvil.setBalance({ address: payer.address, value: parseEther("1") });
        await approvePermit2(devnet, payer, devnet.token.address);
      }
    }

    const keyFile = path.join(dir, "settlement.key");
    writeFileSync(keyFile, `${devnet.facilitator.privateKey}\n`, { mode: 0o600 });
    const oursRpc = await rpcProxy(devnet.rpcUrl);
    const officialRpc = await rpcProxy(devnet.rpcUrl);
    proxies.push(oursRpc, officialRpc);
    const ours = await startOurs({ rpc: oursRpc, keyFile, authorizer, dir });
    targets.push(ours);
    const official = await startOfficial({
      script: fileURLToPath(import.meta.url),
      rpc: officialRpc,
      relayer,
      authorizer,
    });
    targets.push(official);
    log(
      `devnet ${devnet.rpcUrl}; ours settles from ${devnet.facilitator.address}, the official ` +
        `facilitator from ${relayer.address}; both hold receiver authorizer ${authorizer.address}; ` +
        `${os.cpus().length} cores, node ${process.version}`,
    );

    // Warm-up, not counted: the payee holds the token, has claimed and settled before.
    const accepted = requirementsFor(devnet, authorizer, "eip3009");
    await exactGas(devnet, ours, devnet.payers[0] as DevAccount);
    const warm = await openChannels(devnet, ours, [warmPayer], accepted, 5n * PRICE, 1, "warm-up");
    await claimAndSettle(devnet, ours, warm.channels, accepted, "warm-up");

    // Gas.
    const exact = new Map<string, bigint>();
    for (const target of targets) {
      const gas = await exactGas(devnet, target, devnet.payers[1] as DevAccount);
      if (gas !== undefined) exact.set(target.name, gas);
    }
    const rounds: GasRound[] = [];
    for (const method of methods) {
      for (const n of NS) {
        for (const target of targets) {
          const t = performance.now();
          const payers = roundPayers.get(`${target.name} ${method} ${n}`) ?? [];
          const round = await gasRound(devnet, target, authorizer, payers, n, method);
          if (round) rounds.push(round);
          log(
            `gas ${target.name} ${method} N=${n}: ${((performance.now() - t) / 1000).toFixed(1)} s`,
          );
        }
      }
    }

    // Rates: the voucher channels are funded through us once; both verify the same vouchers.
    const rate = await openChannels(
      devnet,
      ours,
      ratePayers,
      accepted,
      RATE_DEPOSIT,
      16,
      "rate channels",
    );
    const rates: RateRow[] = [];
    const journalFile = path.join(dir, "journal.jsonl");
    const journalBytes = () => (existsSync(journalFile) ? statSync(journalFile).size : 0);
    /** What our journal grew by over the voucher levels (warm-up vouchers included). */
    const journal = { bytes: 0, vouchers: 0 };
    if (rate.channels.length === RATE_CHANNELS) {
      const perChannel = Math.ceil(VOUCHERS / RATE_CHANNELS) + 1;
      for (const concurrency of CONCURRENCY) {
        const bodies = await voucherBodies(rate.channels, perChannel, accepted);
        for (const target of targets) {
          const before = journalBytes();
          const level = await voucherLevel(target, bodies, concurrency);
          if (target.name === "ours") {
            // Its journal lines are written off the hot path: give the last group a moment.
            await new Promise((resolve) => setTimeout(resolve, 200));
            journal.bytes += journalBytes() - before;
            journal.vouchers += level.latenciesMs.length + bodies.length;
          }
          rates.push({ kind: "voucher (verify)", facilitator: target.name, concurrency, level });
          log(
            `voucher ${target.name} c=${concurrency}: ${level.count} in ${level.seconds.toFixed(1)} s`,
          );
        }
      }
    }
    for (const concurrency of CONCURRENCY) {
      for (const target of targets) {
        const level = await exactLevel(devnet, target, concurrency);
        rates.push({
          kind: "exact (verify + settle)",
          facilitator: target.name,
          concurrency,
          level,
        });
        log(
          `exact ${target.name} c=${concurrency}: ${level.count} in ${level.seconds.toFixed(1)} s`,
        );
      }
    }
    for (const row of rates) {
      const where = `${row.kind} ${row.facilitator} c=${row.concurrency}`;
      for (const error of row.level.errors) fail(where, error);
      if (row.level.notSent > 0) {
        fail(where, `${row.level.notSent} requests not sent within ${SECONDS} s`);
      }
    }
    for (const target of targets) {
      if (exited(target.child)) fail(target.name, `the server exited early:\n${target.log()}`);
    }

    // Report.
    console.log("");
    console.log(
      `### Gas per paid request (K = ${K} channels per round, EIP-3009 deposits${PERMIT2 ? " and Permit2" : ""})`,
    );
    console.log("");
    console.log(gasTable(rounds, exact));
    console.log("");
    console.log(
      `### Paid requests per second through HTTP (${os.cpus().length} cores shared by anvil, both servers and the load generator)`,
    );
    console.log("");
    console.log(rateTable(rates));
    console.log("");
    for (const row of rates) {
      const methods = Object.entries(row.level.rpcMethods)
        .sort(([, a], [, b]) => b - a)
        .map(([m, c]) => `${m} ${(c / Math.max(1, row.level.count)).toFixed(2)}`)
        .join(", ");
      console.log(
        `RPC per request, ${row.kind} ${row.facilitator} c=${row.concurrency}: ${methods || "none"}`,
      );
    }
    if (journal.vouchers > 0) {
      console.log(
        `ours' journal (${path.basename(journalFile)}) grew ${int(journal.bytes)} bytes over ` +
          `${int(journal.vouchers)} accepted vouchers: ${fixed(journal.bytes / journal.vouchers, 0)} bytes per voucher`,
      );
    }
    const fifty = rounds.find((r) => r.facilitator === "ours" && r.n === 50);
    if (fifty) {
      const perRequest =
        Number(fifty.deposits.reduce((a, b) => a + b, 0n) + fifty.claim + fifty.settle) /
        (fifty.k * fifty.n);
      const tenth = Number(exact.get("ours") ?? EXACT_GAS_HINT) / 10;
      console.log(
        `target: ours at N=50 under a tenth of an exact transfer: ${int(perRequest)} vs ${int(tenth)} gas: ${perRequest < tenth ? "met" : "UNMET"}`,
      );
    }
    console.log(
      `exact paid request = POST /verify then POST /settle (waitUntil confirmed); voucher paid ` +
        `request = POST /verify of a fresh voucher over ${RATE_CHANNELS} channels. Took ` +
        `${((performance.now() - started) / 1000).toFixed(0)} s.`,
    );
    if (failures.length > 0) {
      console.error("");
      for (const failure of failures.slice(0, 20)) console.error(`bench: FAILED ${failure}`);
      if (failures.length > 20) console.error(`bench: … ${failures.length - 20} more failures`);
      return 1;
    }
    console.log("no request failed; every claim and settle moved what it should");
    return 0;
  } catch (error) {
    console.error(
      `bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    for (const target of targets) {
      const text = target.log().trim();
      if (text) console.error(`${target.name} stderr (tail):\n${text}`);
    }
    return 1;
  } finally {
    await cleanup();
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

if (process.env.BENCH_BATCH_ROLE === "official") {
  await runOfficialServer();
} else {
  process.exitCode = await main();
}
