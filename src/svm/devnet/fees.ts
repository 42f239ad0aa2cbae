/**
 * The fee a transaction pays, as Solana (and litesvm, which charges it) computes it: 5,000
 * lamports per signature plus the priority fee, the compute-unit price (micro-lamports) times the
 * compute-unit limit, rounded up. Without a SetComputeUnitLimit the limit is 200,000 units per
 * instruction other than compute-budget ones (capped at 1,400,000).
 */
import type { getCompiledTransactionMessageDecoder } from "@solana/kit";

type CompiledMessage = ReturnType<
  ReturnType<typeof getCompiledTransactionMessageDecoder>["decode"]
>;

import { COMPUTE_BUDGET_PROGRAM, LAMPORTS_PER_SIGNATURE } from "../exact/constants.js";

export { LAMPORTS_PER_SIGNATURE };

import { transactionFeeLamports } from "../exact/fees.js";

const DEFAULT_UNITS_PER_INSTRUCTION = 200_000n;
const MAX_UNITS = 1_400_000n;

export function transactionFee(message: CompiledMessage): bigint {
  // v1 messages carry their compute budget in config values; only the base fee is counted for them.
  if (!("instructions" in message)) {
    return LAMPORTS_PER_SIGNATURE * BigInt(message.header.numSignerAccounts);
  }
  let limit: bigint | undefined;
  let price = 0n;
  let others = 0n;
  for (const ix of message.instructions) {
    const program = message.staticAccounts[ix.programAddressIndex];
    const data = ix.data as Uint8Array | undefined;
    if (program !== COMPUTE_BUDGET_PROGRAM || !data || data.length === 0) {
      others += 1n;
      continue;
    }
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    if (data[0] === 2 && data.length >= 5) limit = BigInt(view.getUint32(1, true));
    if (data[0] === 3 && data.length >= 9) price = view.getBigUint64(1, true);
  }
  let units = limit ?? DEFAULT_UNITS_PER_INSTRUCTION * others;
  if (units > MAX_UNITS) units = MAX_UNITS;
  return transactionFeeLamports(message.header.numSignerAccounts, Number(units), price);
}
