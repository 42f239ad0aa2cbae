/**
 * bench:compare's rounds: verify load at one concurrency, and a settle run checked on chain (the
 * payee got exactly what was paid, one transaction per payment, no hash answered twice).
 */

import http1 from "node:http";
import { type Address, createPublicClient, http } from "viem";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import type { Devnet } from "../src/evm/devnet/index.js";
import { fmt, type Row } from "./compare-report.js";
import { type Cpu, cpuMeter, perRequest, type Server, sleep, state } from "./compare-servers.js";
import { percentile } from "./lib.js";
import { loadPosts, type Posted, postOnce, succeeded } from "./load.js";

const CHAIN_CHECK_ATTEMPTS = 10;
const CHAIN_CHECK_PAUSE_MS = 300;

export const failure = (answer: Posted): string | undefined =>
  answer.error ??
  (succeeded(answer) ? undefined : `${answer.status} ${answer.text.trim().slice(0, 300)}`);

export interface Round {
  readonly cpu?: Cpu;
  readonly count: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly errors: string[];
}

/**
 * Sends bodies[i % length] to `url`, `concurrency` at a time, until `total` have been answered or
 * `seconds` have passed (requests not sent by then are not counted).
 */
export async function load(
  url: string,
  bodies: readonly string[],
  concurrency: number,
  total: number,
  seconds: number,
  timeoutMs: number,
): Promise<Round & { answers: Posted[] }> {
  const loaded = await loadPosts(url, bodies, concurrency, total, {
    seconds,
    timeoutMs,
    stop: () => state.interrupting,
  });
  const errors = loaded.answers.flatMap((a) => failure(a) ?? []);
  return {
    count: loaded.answers.length,
    seconds: loaded.seconds,
    latenciesMs: loaded.answers.map((a) => a.ms),
    errors,
    answers: loaded.answers,
  };
}

/** "CPU per request: server x ms, anvil y ms, load generator z ms" for a round. */
/**
 * The p50, p99 and server-CPU rows of ours beside the reference; `what` starts each label ("verify
 * c=64"), `each` names what the CPU is per ("req", "settle").
 */
export function latencyAndCpuRows(
  what: string,
  each: string,
  ours: Round,
  reference: Round,
  latencyDigits: number,
): Row[] {
  return [
    {
      label: `${what} p50 ms`,
      ours: percentile(ours.latenciesMs, 50),
      reference: percentile(reference.latenciesMs, 50),
      digits: latencyDigits,
    },
    {
      label: `${what} p99 ms`,
      ours: percentile(ours.latenciesMs, 99),
      reference: percentile(reference.latenciesMs, 99),
      digits: latencyDigits,
    },
    {
      label: `${what} server CPU ms/${each}`,
      ours: perRequest(ours.cpu?.server, ours.count),
      reference: perRequest(reference.cpu?.server, reference.count),
      digits: 2,
    },
  ];
}

export function cpuLine(round: Round): string {
  const each = (ms: number | undefined) => fmt(perRequest(ms, round.count), 2);
  const cpu = round.cpu;
  if (!cpu) return "CPU n/a";
  return (
    `CPU ms per request: server ${each(cpu.server)}, anvil ${each(cpu.anvil)}, ` +
    `load generator ${each(cpu.client)}`
  );
}

export interface SettleRun extends Round {
  /** What the chain shows: the payee's gain, the signer's transactions, the hashes answered. */
  readonly payeeDelta: bigint;
  readonly sent: number;
  readonly hashes: readonly string[];
  readonly problems: string[];
}

export interface SettleSettings {
  readonly amount: bigint;
  readonly concurrency: number;
  readonly seconds: number;
  readonly timeoutMs: number;
}

const transactionHash = (answer: Posted): string | undefined => {
  if (answer.status !== 200) return undefined;
  try {
    const hash = (JSON.parse(answer.text) as { transactionHash?: unknown }).transactionHash;
    return typeof hash === "string" ? hash : undefined;
  } catch {
    return undefined;
  }
};

/** One settle before the measured ones (connections opened, caches warm); its problem, if any. */
export async function warmUpSettle(server: Server, body: string, timeoutMs: number) {
  const agent = new http1.Agent({ keepAlive: false });
  const answer = await postOnce(new URL(`${server.url}/settle`), body, agent, timeoutMs);
  agent.destroy();
  return failure(answer);
}

/** Settles `bodies` through `server`, then checks on chain that each landed exactly once. */
export async function settleRun(
  devnet: Devnet,
  server: Server,
  signer: Address,
  bodies: readonly string[],
  settings: SettleSettings,
): Promise<SettleRun> {
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
    settings.concurrency,
    bodies.length,
    settings.seconds,
    settings.timeoutMs,
  );
  const cpu = meter();
  const notSent = bodies.length - round.count;

  // Every answered settle waited for its receipt; a failed one may still land a moment later.
  const expectedDelta = BigInt(bodies.length) * settings.amount;
  let payeeDelta = 0n;
  let sent = 0;
  for (let attempt = 0; attempt < CHAIN_CHECK_ATTEMPTS; attempt++) {
    payeeDelta = (await payeeBalance()) - payeeBefore;
    sent = (await sentBy()) - countBefore;
    if (payeeDelta === expectedDelta && sent === bodies.length) break;
    if (round.errors.length === 0 && notSent === 0) await sleep(CHAIN_CHECK_PAUSE_MS);
    else break;
  }
  const hashes = round.answers.flatMap((a) => transactionHash(a) ?? []);
  const problems: string[] = [];
  if (payeeDelta !== expectedDelta) {
    problems.push(`payee balance +${payeeDelta}, expected +${expectedDelta}`);
  }
  if (sent !== bodies.length) {
    problems.push(`${sent} transactions from the signer, expected ${bodies.length}`);
  }
  const errors = [
    ...round.errors,
    ...(notSent > 0 ? [`${notSent} settles not sent within ${settings.seconds} s`] : []),
  ];
  return {
    cpu,
    count: round.count - round.errors.length,
    seconds: round.seconds,
    latenciesMs: round.answers.filter((a) => !failure(a)).map((a) => a.ms),
    errors,
    payeeDelta,
    sent,
    hashes,
    problems,
  };
}

const sum = (values: readonly (number | undefined)[]) =>
  values.some((v) => v === undefined)
    ? undefined
    : values.reduce<number>((a, v) => a + (v ?? 0), 0);

/** Rounds of one server's settles as one run: counts, times and CPU added, checks over all. */
export function mergeSettleRuns(runs: readonly SettleRun[]): SettleRun {
  const hashes = runs.flatMap((r) => r.hashes);
  const problems = runs.flatMap((r) => r.problems);
  if (new Set(hashes).size !== hashes.length) {
    problems.push("one transaction hash answered for two payments");
  }
  return {
    cpu: {
      server: sum(runs.map((r) => r.cpu?.server)),
      anvil: sum(runs.map((r) => r.cpu?.anvil)),
      client: sum(runs.map((r) => r.cpu?.client)) ?? 0,
    },
    count: runs.reduce((a, r) => a + r.count, 0),
    seconds: runs.reduce((a, r) => a + r.seconds, 0),
    latenciesMs: runs.flatMap((r) => r.latenciesMs),
    errors: runs.flatMap((r) => r.errors),
    payeeDelta: runs.reduce((a, r) => a + r.payeeDelta, 0n),
    sent: runs.reduce((a, r) => a + r.sent, 0),
    hashes,
    problems,
  };
}

/** What the chain showed for a run, in words. */
export function settleChecks(run: SettleRun, payments: number, amount: bigint): string {
  return (
    `payee +${run.payeeDelta} (expected ${payments} × ${amount}), ` +
    `${run.sent} transactions sent, ${new Set(run.hashes).size} distinct hashes`
  );
}
