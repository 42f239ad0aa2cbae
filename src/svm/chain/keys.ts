/** The Solana fee payer's key: base58 of its 64-byte secret key; redacted in logs and JSON. */
import { createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto";
import { base58ToBytes, bytesToBase58 } from "../../protocol/base58.js";

export interface SvmFeePayer {
  /** The fee payer's address (base58 public key). */
  readonly address: string;
  /** The 64-byte secret key. */
  readonly secretKey: Uint8Array;
}

const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/** The fee payer for a base58 secret key, or undefined (never saying what the text was). */
export function svmFeePayerOf(text: string): SvmFeePayer | undefined {
  const trimmed = text.trim();
  if (!/^[1-9A-HJ-NP-Za-km-z]{80,90}$/.test(trimmed)) return undefined;
  const bytes = base58ToBytes(trimmed);
  return bytes ? svmFeePayerOfBytes(bytes) : undefined;
}

/** The fee payer for a 64-byte secret key, or undefined when the bytes are not one. */
export function svmFeePayerOfBytes(bytes: Uint8Array): SvmFeePayer | undefined {
  if (bytes.length !== 64) return undefined;
  const publicKey = ed25519PublicKey(bytes.subarray(0, 32));
  if (!Buffer.from(publicKey).equals(Buffer.from(bytes.subarray(32)))) return undefined;
  return redacting({ address: bytesToBase58(publicKey), secretKey: new Uint8Array(bytes) });
}

function ed25519PrivateKey(seed: Uint8Array): KeyObject {
  const key = Buffer.concat([PKCS8_ED25519_PREFIX, seed]);
  return createPrivateKey({ key, format: "der", type: "pkcs8" });
}

/** The 32-byte public key of an ed25519 seed. */
export function ed25519PublicKey(seed: Uint8Array): Uint8Array {
  const spki = createPublicKey(ed25519PrivateKey(seed)).export({ format: "der", type: "spki" });
  return new Uint8Array(spki.subarray(spki.length - 32));
}

/** The key, frozen, with its secret redacted from JSON and inspection (spreading unaffected). */
export function redacting<K extends { readonly address: string }>(key: K): K {
  const redacted = () => ({ address: key.address, secretKey: "<redacted>" });
  Object.defineProperty(key, "toJSON", { value: redacted });
  Object.defineProperty(key, Symbol.for("nodejs.util.inspect.custom"), { value: redacted });
  return Object.freeze(key);
}

/** The signing key behind each fee payer, made once (never part of the key object itself). */
const signingKeys = new WeakMap<SvmFeePayer, KeyObject>();

/** The fee payer's Ed25519 signature of `message` (deterministic: one message, one signature). */
export function signWithFeePayer(feePayer: SvmFeePayer, message: Uint8Array): Uint8Array {
  const key = signingKeys.get(feePayer) ?? ed25519PrivateKey(feePayer.secretKey.subarray(0, 32));
  signingKeys.set(feePayer, key);
  return new Uint8Array(sign(null, message, key));
}
