/** The fee a transaction pays, as Solana (and litesvm) computes it. */
import type { getCompiledTransactionMessageDecoder } from "@solana/kit";

import {
  COMPUTE_BUDGET_PROGRAM,
  LAMPORTS_PER_SIGNATURE,
  MAX_TRANSACTION_COMPUTE_UNITS,
} from "../exact/constants.js";
import { defaultComputeUnits, transactionFeeLamports } from "../exact/fees.js";
import { readComputeUnitLimit, readComputeUnitPrice } from "../exact/instructions.js";

export { LAMPORTS_PER_SIGNATURE };

export type CompiledMessage = ReturnType<
  ReturnType<typeof getCompiledTransactionMessageDecoder>["decode"]
>;

export function transactionFee(message: CompiledMessage): bigint {
  // v1 messages carry their compute budget in config values; only the base fee is counted for them.
  if (!("instructions" in message)) {
    return LAMPORTS_PER_SIGNATURE * BigInt(message.header.numSignerAccounts);
  }
  let limit: number | undefined;
  let price = 0n;
  let others = 0;
  for (const ix of message.instructions) {
    const programId = message.staticAccounts[ix.programAddressIndex] as string;
    const data = (ix.data ?? new Uint8Array()) as Uint8Array;
    if (programId !== COMPUTE_BUDGET_PROGRAM || data.length === 0) others += 1;
    limit = readComputeUnitLimit({ programId, data }) ?? limit;
    price = readComputeUnitPrice({ programId, data }) ?? price;
  }
  // An explicit limit is capped as the default is.
  const units = Math.min(limit ?? defaultComputeUnits(others), MAX_TRANSACTION_COMPUTE_UNITS);
  return transactionFeeLamports(message.header.numSignerAccounts, units, price);
}
