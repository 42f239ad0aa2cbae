/**
 * EIP-55 addresses with our keccak: every verify reads several addresses (the payer, the payee,
 * the asset), and viem's checksum hashes each with its general-purpose keccak (about 9 µs; it
 * remembers the last few thousand, which a busy facilitator with many payers outgrows).
 */
import type { Address } from "viem";
import { keccak256Bytes } from "./keccak.js";

const ascii = new Uint8Array(40);

/** `0x` + the 40 lower-case hex digits given, each letter upper-cased where EIP-55 says. */
export function checksumAddress(lowerDigits: string): Address {
  for (let i = 0; i < 40; i++) ascii[i] = lowerDigits.charCodeAt(i);
  const hash = keccak256Bytes(ascii);
  let address = "0x";
  for (let i = 0; i < 40; i++) {
    const nibble = ((hash[i >> 1] as number) >> (i % 2 === 0 ? 4 : 0)) & 0x0f;
    const char = lowerDigits[i] as string;
    address += nibble >= 8 ? char.toUpperCase() : char;
  }
  return address as Address;
}

/**
 * What viem's `isAddress(value, { strict: true })` says: `0x` and 40 hex digits, all lower case or
 * its own checksum.
 */
export function hasValidChecksum(value: string): boolean {
  if (!/^0x[0-9a-fA-F]{40}$/.test(value)) return false;
  const lower = value.toLowerCase();
  return value === lower || checksumAddress(lower.slice(2)) === value;
}
