/** Every required signer but the fee payer (who signs at settle) must have signed: checked locally. */
import { createPublicKey, type KeyObject, verify } from "node:crypto";
import type { Address } from "@solana/kit";
import { getAddressEncoder } from "@solana/kit";
import { setNewest } from "../../core/newest.js";
import type { SvmTransaction } from "./decode.js";

/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 key bytes follow. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const addressEncoder = getAddressEncoder();

/** Public keys already made (payers pay again); the oldest are forgotten past this many. */
const KEPT = 10_000;
const keys = new Map<string, KeyObject>();

function publicKeyOf(signer: string): KeyObject {
  let key = keys.get(signer);
  if (key) return key;
  key = createPublicKey({
    key: Buffer.concat([
      ED25519_SPKI_PREFIX,
      Uint8Array.from(addressEncoder.encode(signer as Address)),
    ]),
    format: "der",
    type: "spki",
  });
  setNewest(keys, signer, key, KEPT);
  return key;
}

export function ed25519Verifies(
  signer: string,
  signature: Uint8Array,
  message: Uint8Array,
): boolean {
  try {
    return verify(null, message, publicKeyOf(signer), signature);
  } catch {
    return false;
  }
}

/** The first required signer after the fee payer whose signature is missing or wrong. */
export function firstBadSignature(tx: SvmTransaction): string | undefined {
  const bad = ({ signer, signature }: SvmTransaction["signatures"][number]) =>
    signature?.length !== 64 || !ed25519Verifies(signer, signature, tx.messageBytes);
  return tx.signatures.slice(1).find(bad)?.signer;
}
