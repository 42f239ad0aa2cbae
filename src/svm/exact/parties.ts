/**
 * Who a Solana `exact` payment names as its payer, for the deny list: the transfer's authority
 * (the payer's wallet, as the reference reads it), decoded from the transaction without a chain
 * call. An undecodable transaction names nobody here; verify refuses it for what it is.
 */
import type { Parties } from "../../deny-list/deny-list.js";
import { decodeSvmTransaction } from "./decode.js";
import { tokenPayer } from "./instructions.js";

export function svmParties(transaction: unknown): Parties {
  const decoded = decodeSvmTransaction(transaction);
  const payer = decoded.ok ? tokenPayer(decoded.transaction.instructions) : undefined;
  return { payers: payer === undefined ? [] : [payer], payees: [] };
}
