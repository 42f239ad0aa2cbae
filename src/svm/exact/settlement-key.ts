/** A Solana payment's journal key from the request alone: our deterministic signature remakes its id. */
import { type SvmFeePayer, signWithFeePayer } from "../chain/keys.js";
import { SVM_KEY_PREFIX } from "../chain/ledger-reads.js";
import { decodeSvmTransaction, signatureToBase58 } from "./decode.js";

export type SvmSettlementKey =
  | { readonly ok: true; readonly key: string }
  | { readonly ok: false; readonly why: string };

/** The key settle writes a Solana settlement under: its network and its transaction's id. */
export function svmKeyOf(network: string, signature: string): string {
  return `${SVM_KEY_PREFIX}${network}:${signature}`;
}

export function svmSettlementKey(
  network: string,
  transaction: unknown,
  keys: readonly SvmFeePayer[],
): SvmSettlementKey {
  const decoded = decodeSvmTransaction(transaction);
  if (!decoded.ok) return { ok: false, why: `its transaction cannot be read: ${decoded.message}` };
  const { staticAccounts, messageBytes } = decoded.transaction;
  const feePayer = keys.find((key) => key.address === staticAccounts[0]);
  if (!feePayer) {
    return {
      ok: false,
      why: `its settlement is named by the signature of fee payer ${staticAccounts[0]}, whose key is not configured here (--svm-private-key-file or FACILITATOR_SVM_PRIVATE_KEY); ask with --transaction SIGNATURE instead`,
    };
  }
  const signature = signatureToBase58(signWithFeePayer(feePayer, messageBytes));
  return { ok: true, key: svmKeyOf(network, signature) };
}
