/**
 * EIP-55 addresses with our keccak: every verify reads several addresses (the payer, the payee,
 * the asset), and viem's checksum hashes each with its general-purpose keccak (about 9 µs). A
 * miss here costs one 40-byte keccak; the payee, the asset and a payer met twice cost a lookup.
 */
import type { Address } from "viem";
import { setNewest } from "../../core/newest.js";
import { keccak256Bytes } from "./keccak.js";

const ascii = new Uint8Array(40);
const chars = new Array<number>(42);
chars[0] = 0x30; // "0"
chars[1] = 0x78; // "x"
/**
 * The addresses met lately, by their lower-case digits: a payment names its payee and asset again
 * and again, and its payer twice (in the payload and as the recovered signer). The oldest are forgotten.
 */
const recent = new Map<string, Address>();
const RECENT_LIMIT = 4096;

/** `0x` + the 40 lower-case hex digits given, each letter upper-cased where EIP-55 says. */
export function checksumAddress(lowerDigits: string): Address {
  const known = recent.get(lowerDigits);
  if (known !== undefined) return known;
  for (let i = 0; i < 40; i++) ascii[i] = lowerDigits.charCodeAt(i);
  const hash = keccak256Bytes(ascii);
  for (let i = 0; i < 40; i++) {
    const nibble = ((hash[i >> 1] as number) >> (i % 2 === 0 ? 4 : 0)) & 0x0f;
    const code = ascii[i] as number;
    // a–f (0x61–0x66) become A–F where the hash's nibble is 8 or more.
    chars[i + 2] = nibble >= 8 && code >= 0x61 ? code - 0x20 : code;
  }
  const address = String.fromCharCode(...chars) as Address;
  setNewest(recent, lowerDigits, address, RECENT_LIMIT);
  return address;
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
