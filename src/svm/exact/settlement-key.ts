/** From the request alone: a Solana payment's journal key (our signature remakes its id) and payer. */

import { getBase58Decoder } from "@solana/kit";
import type { SettlementKey } from "../../core/family.js";
import type { Parties } from "../../deny-list/deny-list.js";
import { type SvmFeePayer, signWithFeePayer } from "../chain/keys.js";
import { SVM_KEY_PREFIX } from "../chain/ledger-reads.js";
import { decodeSvmTransaction, type SvmTransaction } from "./decode.js";
import { tokenPayer } from "./instructions.js";

/** Our fee payer's signature of `tx` (undefined without its key): the transaction's id and key. */
export function signAsFeePayer(
  network: string,
  tx: Pick<SvmTransaction, "staticAccounts" | "messageBytes">,
  keys: readonly SvmFeePayer[],
) {
  const feePayer = keys.find((key) => key.address === tx.staticAccounts[0]);
  if (!feePayer) return undefined;
  const bytes = signWithFeePayer(feePayer, tx.messageBytes);
  // Base58 of our signature, the first: the transaction's id, which keys the journal.
  const signature = getBase58Decoder().decode(bytes);
  return { feePayer, bytes, signature, key: `${SVM_KEY_PREFIX}${network}:${signature}` };
}

export function svmSettlementKey(
  network: string,
  transaction: unknown,
  keys: readonly SvmFeePayer[],
): SettlementKey {
  const decoded = decodeSvmTransaction(transaction);
  if (!decoded.ok) return { ok: false, why: `its transaction cannot be read: ${decoded.message}` };
  const signed = signAsFeePayer(network, decoded.transaction, keys);
  if (!signed) {
    return {
      ok: false,
      why: `its settlement is named by the signature of fee payer ${decoded.transaction.staticAccounts[0]}, whose key is not configured here (--svm-private-key-file or FACILITATOR_SVM_PRIVATE_KEY); ask with --transaction SIGNATURE instead`,
    };
  }
  return { ok: true, key: signed.key };
}

/** The payer an `exact` payment names (its transfer's authority), for the deny list. */
export function svmParties(transaction: unknown): Parties {
  const decoded = decodeSvmTransaction(transaction);
  const payer = decoded.ok ? tokenPayer(decoded.transaction.instructions) : undefined;
  return { payers: payer === undefined ? [] : [payer], payees: [] };
}
