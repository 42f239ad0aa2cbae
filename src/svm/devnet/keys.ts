/**
 * The Solana devnet's keys, derived from fixed labels (the same everywhere, as anvil's). Public
 * test keys, still redacted when logged. `secretKey` is the 64-byte secret key in base58.
 */
import { createHash } from "node:crypto";
import { type Address, getBase58Decoder, getBase58Encoder } from "@solana/kit";
import { ed25519PublicKey, redacting } from "../chain/keys.js";

export interface SvmDevKey {
  readonly address: Address;
  readonly secretKey: string;
}

const base58 = getBase58Decoder();

/** The 64-byte secret key (seed ‖ public key) for a 32-byte ed25519 seed. */
export function secretKeyFromSeed(seed: Uint8Array): Uint8Array {
  if (seed.length !== 32) throw new Error("an ed25519 seed is 32 bytes");
  const secret = new Uint8Array(64);
  secret.set(seed, 0);
  secret.set(ed25519PublicKey(seed), 32);
  return secret;
}

/** The dev key for a role label (e.g. "fee-payer", "payer-0"). */
export function svmDevKey(label: string): SvmDevKey {
  const seed = createHash("sha256").update(`facilitator svm devnet key: ${label}`).digest();
  const secret = secretKeyFromSeed(seed);
  const address = base58.decode(secret.subarray(32)) as Address;
  return redacting({ address, secretKey: base58.decode(secret) });
}

/** The secret key's 64 bytes, for signers (e.g. @solana/kit's createKeyPairSignerFromBytes). */
export function secretKeyBytes(key: SvmDevKey): Uint8Array {
  return new Uint8Array(getBase58Encoder().encode(key.secretKey));
}
