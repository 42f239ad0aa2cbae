/**
 * The Solana devnet's keys: derived from fixed labels, so every run (and every machine) has the
 * same addresses, as anvil's dev accounts are. They are public test keys, funded only on the local
 * devnet. Still, never print them: the key objects redact `secretKey` when logged or turned into
 * JSON.
 *
 * `secretKey` is the 64-byte Solana secret key (seed then public key) in base58, the form the
 * x402 tooling and `solana-keygen` files use.
 */
import { createHash, createPrivateKey, createPublicKey } from "node:crypto";
import { type Address, getBase58Decoder, getBase58Encoder } from "@solana/kit";

export interface SvmDevKey {
  readonly address: Address;
  readonly secretKey: string;
}

const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const base58 = getBase58Decoder();

/** The 64-byte secret key (seed ‖ public key) for a 32-byte ed25519 seed. */
export function secretKeyFromSeed(seed: Uint8Array): Uint8Array {
  if (seed.length !== 32) throw new Error("an ed25519 seed is 32 bytes");
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
    format: "der",
    type: "pkcs8",
  });
  const spki = createPublicKey(privateKey).export({ format: "der", type: "spki" });
  const publicKey = spki.subarray(spki.length - 32);
  const secret = new Uint8Array(64);
  secret.set(seed, 0);
  secret.set(publicKey, 32);
  return secret;
}

function redactable(address: Address, secretKey: string): SvmDevKey {
  const key = { address, secretKey };
  const redacted = (): { address: Address; secretKey: string } => ({
    address,
    secretKey: "<redacted>",
  });
  // Non-enumerable, so spreading or destructuring a key is unaffected.
  Object.defineProperty(key, "toJSON", { value: redacted });
  Object.defineProperty(key, Symbol.for("nodejs.util.inspect.custom"), { value: redacted });
  return Object.freeze(key);
}

/** The dev key for a role label (e.g. "fee-payer", "payer-0"). */
export function svmDevKey(label: string): SvmDevKey {
  const seed = createHash("sha256").update(`facilitator svm devnet key: ${label}`).digest();
  const secret = secretKeyFromSeed(seed);
  return redactable(base58.decode(secret.subarray(32)) as Address, base58.decode(secret));
}

/** The secret key's 64 bytes, for signers (e.g. @solana/kit's createKeyPairSignerFromBytes). */
export function secretKeyBytes(key: SvmDevKey): Uint8Array {
  return new Uint8Array(getBase58Encoder().encode(key.secretKey));
}
