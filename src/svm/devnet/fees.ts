/** The fee a transaction pays, as Solana (and litesvm) computes it. */
import type { getCompiledTransactionMessageDecoder } from "@solana/kit";

type CompiledMessage = ReturnType<
  ReturnType<typeof getCompiledTransactionMessageDecoder>["decode"]
>;

import {
  COMPUTE_BUDGET_PROGRAM,
  LAMPORTS_PER_SIGNATURE,
  MAX_TRANSACTION_COMPUTE_UNITS,
} from "../exact/constants.js";
import { defaultComputeUnits, transactionFeeLamports } from "../exact/fees.js";

export { LAMPORTS_PER_SIGNATURE };

export function transactionFee(message: CompiledMessage): bigint {
  // v1 messages carry their compute budget in config values; only the base fee is counted for them.
  if (!("instructions" in message)) {
    return LAMPORTS_PER_SIGNATURE * BigInt(message.header.numSignerAccounts);
  }
  let limit: number | undefined;
  let price = 0n;
  let others = 0;
  for (const ix of message.instructions) {
    const program = message.staticAccounts[ix.programAddressIndex];
    const data = ix.data as Uint8Array | undefined;
    if (program !== COMPUTE_BUDGET_PROGRAM || !data || data.length === 0) {
      others += 1;
      continue;
    }
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    if (data[0] === 2 && data.length >= 5) limit = view.getUint32(1, true);
    if (data[0] === 3 && data.length >= 9) price = view.getBigUint64(1, true);
  }
  // An explicit limit is capped as the default is.
  const units = Math.min(limit ?? defaultComputeUnits(others), MAX_TRANSACTION_COMPUTE_UNITS);
  return transactionFeeLamports(message.header.numSignerAccounts, units, price);
}
