/**
 * The Solana fee payer's key: a base58 64-byte secret key (the 32-byte ed25519 seed, then the
 * public key), the form the x402 tooling and `solana-keygen` files use. The key object never
 * shows its secret: logged or turned into JSON, it is redacted.
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign } from "node:crypto";
import { base58ToBytes, bytesToBase58 } from "../../protocol/base58.js";

export interface SvmFeePayer {
  /** The fee payer's address (base58 public key). */
  readonly address: string;
  /** The 64-byte secret key. */
  readonly secretKey: Uint8Array;
}

const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/**
 * The fee payer for a base58 secret key, or undefined when the text is not one (not base58, not
 * 64 bytes, or a public half that does not belong to the seed). Never says what the text was.
 */
export function svmFeePayerOf(text: string): SvmFeePayer | undefined {
  const trimmed = text.trim();
  if (!/^[1-9A-HJ-NP-Za-km-z]{80,90}$/.test(trimmed)) return undefined;
  const bytes = base58ToBytes(trimmed);
  return bytes ? svmFeePayerOfBytes(bytes) : undefined;
}

/** The fee payer for a 64-byte secret key, or undefined when the bytes are not one. */
export function svmFeePayerOfBytes(bytes: Uint8Array): SvmFeePayer | undefined {
  if (bytes.length !== 64) return undefined;
  const seed = bytes.subarray(0, 32);
  const spki = createPublicKey(
    createPrivateKey({
      key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
      format: "der",
      type: "pkcs8",
    }),
  ).export({ format: "der", type: "spki" });
  const publicKey = new Uint8Array(spki.subarray(spki.length - 32));
  if (!Buffer.from(publicKey).equals(Buffer.from(bytes.subarray(32)))) return undefined;
  const key = { address: bytesToBase58(publicKey), secretKey: new Uint8Array(bytes) };
  const redacted = () => ({ address: key.address, secretKey: "<redacted>" });
  Object.defineProperty(key, "toJSON", { value: redacted });
  Object.defineProperty(key, Symbol.for("nodejs.util.inspect.custom"), { value: redacted });
  return Object.freeze(key);
}

/** The signing key behind each fee payer, made once (never part of the key object itself). */
const signingKeys = new WeakMap<SvmFeePayer, KeyObject>();

/** The fee payer's Ed25519 signature of `message` (deterministic: one message, one signature). */
export function signWithFeePayer(feePayer: SvmFeePayer, message: Uint8Array): Uint8Array {
  let key = signingKeys.get(feePayer);
  if (!key) {
    key = createPrivateKey({
      key: Buffer.concat([PKCS8_ED25519_PREFIX, feePayer.secretKey.subarray(0, 32)]),
      format: "der",
      type: "pkcs8",
    });
    signingKeys.set(feePayer, key);
  }
  return new Uint8Array(sign(null, message, key));
}
