/** The payer an `exact` payment names (its transfer's authority), for the deny list. */
import type { Parties } from "../../deny-list/deny-list.js";
import { decodeSvmTransaction } from "./decode.js";
import { tokenPayer } from "./instructions.js";

export function svmParties(transaction: unknown): Parties {
  const decoded = decodeSvmTransaction(transaction);
  const payer = decoded.ok ? tokenPayer(decoded.transaction.instructions) : undefined;
  return { payers: payer === undefined ? [] : [payer], payees: [] };
}
