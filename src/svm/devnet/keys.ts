/** The devnet's keys, from fixed labels (public test keys, as anvil's; still redacted in logs). */
import { createHash } from "node:crypto";
import { type Address, getBase58Decoder, getBase58Encoder } from "@solana/kit";
import { ed25519PublicKey, redacting } from "../chain/keys.js";

export interface SvmDevKey {
  readonly address: Address;
  readonly secretKey: string;
}

const base58 = getBase58Decoder();

/** The dev key for a role label (e.g. "fee-payer", "payer-0"). */
export function svmDevKey(label: string): SvmDevKey {
  const seed = createHash("sha256").update(`facilitator svm devnet key: ${label}`).digest();
  // The 64-byte secret key: seed ‖ public key.
  const secret = Buffer.concat([seed, ed25519PublicKey(seed)]);
  const address = base58.decode(secret.subarray(32)) as Address;
  return redacting({ address, secretKey: base58.decode(secret) });
}

/** The secret key's 64 bytes, for signers (e.g. @solana/kit's createKeyPairSignerFromBytes). */
export function secretKeyBytes(key: SvmDevKey): Uint8Array {
  return new Uint8Array(getBase58Encoder().encode(key.secretKey));
}
