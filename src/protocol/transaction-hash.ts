/** Transactions as stores keep them: EVM hashes lower-cased, Solana signatures as given. */
import { base58ToBytes } from "./base58.js";

/** An address as keys compare it: EVM's (hex) lower-cased, Solana's (base58) as written. */
export const addressKey = (address: string) =>
  /^0x[0-9a-fA-F]*$/.test(address) ? address.toLowerCase() : address;

const EVM_HASH = /^0x[0-9a-f]{64}$/i;
const SIGNATURE = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/;

/** How a store keeps and looks up `hash`: an EVM hash lower-cased, anything else unchanged. */
export function storedHash<T extends string>(hash: T): T {
  return (/^0x/i.test(hash) ? hash.toLowerCase() : hash) as T;
}

/** `text` as stores keep it, or undefined when it is neither an EVM hash nor a Solana signature. */
export function transactionHash(text: string): string | undefined {
  if (EVM_HASH.test(text)) return text.toLowerCase();
  if (SIGNATURE.test(text) && base58ToBytes(text)?.length === 64) return text;
  return undefined;
}

/** Why `text` names no transaction, for an invalid_request or a usage error. */
export function notATransactionHash(text: string): string {
  return `not a transaction hash: ${JSON.stringify(text.slice(0, 100))}; give an EVM transaction hash (0x and 64 hex digits) or a Solana transaction signature (base58)`;
}
