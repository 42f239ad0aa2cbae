/** What a Solana transaction costs its fee payer, from the message alone. */
import {
  DEFAULT_UNITS_PER_INSTRUCTION,
  LAMPORTS_PER_SIGNATURE,
  MAX_TRANSACTION_COMPUTE_UNITS,
} from "./constants.js";

/** Base fees plus the priority fee (limit x price in micro-lamports, rounded up), as charged. */
export function transactionFeeLamports(
  requiredSignatures: number,
  computeUnitLimit: number,
  computeUnitPriceMicroLamports: bigint,
): bigint {
  const micro = BigInt(computeUnitLimit) * computeUnitPriceMicroLamports;
  const priority = (micro + 999_999n) / 1_000_000n;
  return LAMPORTS_PER_SIGNATURE * BigInt(requiredSignatures) + priority;
}

/** The limit the runtime gives without SetComputeUnitLimit, for `others` non-budget instructions. */
export function defaultComputeUnits(others: number): number {
  return Math.min(others * DEFAULT_UNITS_PER_INSTRUCTION, MAX_TRANSACTION_COMPUTE_UNITS);
}

/** Why the fee is over `cap`, or undefined when it is within. */
export function feeOverCap(signers: number, units: number, price: bigint, cap: bigint) {
  const fee = transactionFeeLamports(signers, units, price);
  if (fee <= cap) return undefined;
  return `The transaction would cost the fee payer ${fee} lamports (${signers} signatures and ${units} compute units at ${price} micro-lamports); the cap is ${cap}`;
}
