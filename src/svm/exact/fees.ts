/** What a Solana transaction costs its fee payer, from the message alone. */
import { LAMPORTS_PER_SIGNATURE } from "./constants.js";

/**
 * Base fees (one per required signature) plus the priority fee: the compute-unit limit times the
 * price in micro-lamports, rounded up to whole lamports, as the runtime charges it.
 */
export function transactionFeeLamports(
  requiredSignatures: number,
  computeUnitLimit: number,
  computeUnitPriceMicroLamports: bigint,
): bigint {
  const micro = BigInt(computeUnitLimit) * computeUnitPriceMicroLamports;
  const priority = (micro + 999_999n) / 1_000_000n;
  return LAMPORTS_PER_SIGNATURE * BigInt(requiredSignatures) + priority;
}
