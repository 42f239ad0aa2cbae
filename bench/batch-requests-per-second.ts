/**
 * bench:batch's second measurement, paid requests per second through HTTP, at each concurrency
 * and for each facilitator: a voucher paid request (POST /verify of a fresh voucher, over
 * RATE_CHANNELS channels funded once through ours) and an `exact` one (POST /verify, then POST
 * /settle confirmed, the payee's balance checked after each level); and how much our journal grew
 * per accepted voucher.
 */
import { existsSync, statSync } from "node:fs";
import type { DevAccount, Devnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { tokenBalance } from "./batch-chain-reads.js";
import { openChannels } from "./batch-channel-actions.js";
import { type Channel, PRICE } from "./batch-channel-payloads.js";
import { deal, inParallel, type Level, runLevel } from "./batch-load.js";
import { check, fail, log } from "./batch-run-log.js";
import type { Target } from "./batch-server-processes.js";
import {
  CONCURRENCY,
  EXACT,
  EXACT_AMOUNT,
  RATE_CHANNELS,
  RATE_DEPOSIT,
  SECONDS,
  VOUCHERS,
} from "./batch-settings.js";
import { type Json, type Outcome, settleAt, verifyAt, x402Body } from "./batch-x402-http.js";

/** One level of the rate table: a kind of paid request, a facilitator, a concurrency. */
export interface RateRow {
  readonly kind: string;
  readonly facilitator: Target["name"];
  readonly concurrency: number;
  readonly level: Level;
}

/** What our journal grew by over the voucher levels (warm-up vouchers included). */
export interface JournalGrowth {
  bytes: number;
  vouchers: number;
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

/**
 * Every rate level: the voucher levels (if all RATE_CHANNELS channels opened through `ours`),
 * then the exact levels; each level's errors and requests not sent are failures.
 */
export async function measureRates(
  devnet: Devnet,
  ours: Target,
  targets: readonly Target[],
  ratePayers: readonly DevAccount[],
  accepted: Json,
  journalFile: string,
): Promise<{ rates: RateRow[]; journal: JournalGrowth }> {
  // The voucher channels are funded through us once; both verify the same vouchers.
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
  const journalBytes = () => (existsSync(journalFile) ? statSync(journalFile).size : 0);
  const journal: JournalGrowth = { bytes: 0, vouchers: 0 };
  if (rate.channels.length === RATE_CHANNELS) {
    const perChannel = Math.ceil(VOUCHERS / RATE_CHANNELS) + 1;
    for (const concurrency of CONCURRENCY) {
      const bodies = await voucherBodies(rate.channels, perChannel, accepted);
      for (const target of targets) {
        const before = journalBytes();
        const level = await voucherLevel(target, bodies, concurrency);
        if (target.name === "ours") {
          // Its raises are written a second after they are made (RAISE_FLUSH_MS in
          // store/journal.ts): wait past that, or a level shorter than a second writes nothing yet.
          await new Promise((resolve) => setTimeout(resolve, 1_300));
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
      log(`exact ${target.name} c=${concurrency}: ${level.count} in ${level.seconds.toFixed(1)} s`);
    }
  }
  for (const row of rates) {
    const where = `${row.kind} ${row.facilitator} c=${row.concurrency}`;
    for (const error of row.level.errors) fail(where, error);
    if (row.level.notSent > 0) {
      fail(where, `${row.level.notSent} requests not sent within ${SECONDS} s`);
    }
  }
  return { rates, journal };
}
