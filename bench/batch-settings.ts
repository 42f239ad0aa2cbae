/**
 * bench:batch's settings, read once from the environment (bench/batch.ts's header lists them),
 * and the fixed amounts it pays and mints.
 */
import { setting } from "./lib.js";

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

export const NS = listSetting("BENCH_BATCH_N", [1, 10, 50, 500]);
export const K = Math.floor(setting("BENCH_BATCH_CHANNELS", 10));
export const PERMIT2 = process.env.BENCH_BATCH_PERMIT2 !== "0";
export const RATE_CHANNELS = Math.floor(setting("BENCH_BATCH_RATE_CHANNELS", 64));
export const VOUCHERS = Math.floor(setting("BENCH_BATCH_VOUCHERS", 3000));
export const EXACT = Math.floor(setting("BENCH_BATCH_EXACT", 600));
export const CONCURRENCY = listSetting("BENCH_BATCH_CONCURRENCY", [16, 64]);
export const SECONDS = setting("BENCH_BATCH_SECONDS", 20);

/** An exact payment: signSampleRequest's default, 0.01 test USDC. */
export const EXACT_AMOUNT = 10_000n;
/** What each voucher-rate channel holds: enough for every voucher the levels sign. */
export const RATE_DEPOSIT = 100_000_000n;
/** The 10,000 USDC each fresh payer gets. */
export const PAYER_MINT = 10_000n * 10n ** 6n;
/** Setup mints per multicall transaction. */
export const MINTS_PER_TX = 50;
/** The gas of an exact transfer, when the run could not measure ours. */
export const EXACT_GAS_HINT = 68_700n;
