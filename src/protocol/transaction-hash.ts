/**
 * A settlement's transaction as callers name it and stores keep it: an EVM transaction hash (0x
 * and 64 hex digits) in lower case, whatever case it was given in; a Solana transaction signature
 * (base58 of 64 bytes) as it is, since base58 is case-sensitive.
 */

/** How a store keeps and looks up `hash`: an EVM hash lower-cased, anything else unchanged. */
export function storedHash<T extends string>(hash: T): T {
  return (/^0x/i.test(hash) ? hash.toLowerCase() : hash) as T;
}
