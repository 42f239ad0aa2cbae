/** EIP-55 addresses with our keccak and a cache: viem's checksum costs about 9 µs each. */
import type { Address } from "viem";
import { setNewest } from "../../core/newest.js";
import { keccak256Bytes } from "./keccak.js";

const ascii = new Uint8Array(40);
const chars = new Array<number>(42);
chars[0] = 0x30; // "0"
chars[1] = 0x78; // "x"
/** Addresses met lately, by lower-case digits (payees and assets recur); the oldest are forgotten. */
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

/** viem's `isAddress(value, { strict: true })`: 40 hex digits, lower case or its own checksum. */
export function hasValidChecksum(value: string): boolean {
  if (!/^0x[0-9a-fA-F]{40}$/.test(value)) return false;
  const lower = value.toLowerCase();
  return value === lower || checksumAddress(lower.slice(2)) === value;
}
