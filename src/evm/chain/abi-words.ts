/** ABI words written straight into bytes for structs hashed every verify; throws as viem does. */
import type { Hex } from "viem";
import { keccak256Bytes, keccak256Hex } from "./keccak.js";

const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) NIBBLE[48 + i] = i;
for (let i = 0; i < 6; i++) {
  NIBBLE[65 + i] = 10 + i;
  NIBBLE[97 + i] = 10 + i;
}

/** Writes `digits` (hex without 0x) right-aligned in the 32-byte word at `offset`. */
function writeDigits(out: Uint8Array, offset: number, digits: string, what: string): void {
  if (digits.length > 64 || digits.length % 2 !== 0) throw new RangeError(`${what} does not fit`);
  const start = offset + 32 - digits.length / 2;
  out.fill(0, offset, start);
  for (let i = 0; i < digits.length; i += 2) {
    const high = NIBBLE[digits.charCodeAt(i)] ?? -1;
    const low = NIBBLE[digits.charCodeAt(i + 1)] ?? -1;
    if (high < 0 || low < 0) throw new RangeError(`${what} is not hex`);
    out[start + i / 2] = (high << 4) | low;
  }
}

function digitsOf(hex: string, bytes: number, what: string): string {
  if (hex.length !== 2 + 2 * bytes || hex[0] !== "0" || (hex[1] !== "x" && hex[1] !== "X")) {
    throw new RangeError(`${what} must be ${bytes} bytes of hex`);
  }
  return hex.slice(2);
}

/** An `address` word. */
export function writeAddress(out: Uint8Array, offset: number, address: Hex): void {
  writeDigits(out, offset, digitsOf(address, 20, "address"), "address");
}

/** A `bytes32` word. */
export function writeBytes32(out: Uint8Array, offset: number, value: Hex): void {
  writeDigits(out, offset, digitsOf(value, 32, "bytes32"), "bytes32");
}

/** A `uint<bits>` word (uint256 unless said). */
export function writeUint(out: Uint8Array, offset: number, value: bigint, bits = 256): void {
  if (value < 0n || value >= 1n << BigInt(bits)) throw new RangeError(`uint${bits} out of range`);
  const digits = value.toString(16);
  writeDigits(out, offset, digits.length % 2 === 0 ? digits : `0${digits}`, `uint${bits}`);
}

/** Bytes of a 0x-hex string of any even length. */
export function bytesOfHex(hex: Hex): Uint8Array {
  const out = new Uint8Array((hex.length - 2) / 2);
  for (let i = 0; i < out.length; i++) {
    const high = NIBBLE[hex.charCodeAt(2 + 2 * i)] ?? -1;
    const low = NIBBLE[hex.charCodeAt(3 + 2 * i)] ?? -1;
    if (high < 0 || low < 0) throw new RangeError("not hex");
    out[i] = (high << 4) | low;
  }
  return out;
}

const scratch = new Map<number, Uint8Array>();

/** keccak256 of `words` 32-byte words `write` puts in a reused scratch buffer (hashing is sync). */
export function hashWords(words: number, write: (out: Uint8Array) => void): Uint8Array {
  let out = scratch.get(words);
  if (!out) {
    out = new Uint8Array(32 * words);
    scratch.set(words, out);
  }
  write(out);
  return keccak256Bytes(out);
}

const typedInput = new Uint8Array(66);
typedInput[0] = 0x19;
typedInput[1] = 0x01;

/** An EIP-712 digest: keccak256("\x19\x01" ‖ domain separator ‖ struct hash). */
export function typedDigestOf(separator: Hex, structHash: Uint8Array): Hex {
  writeBytes32(typedInput, 2, separator);
  typedInput.set(structHash, 34);
  return keccak256Hex(typedInput);
}

/** keccak256 of a struct's words written straight into bytes (every verify): type hash, then
 * each field. */
export function hashStruct(typeHash: Hex, fields: readonly (Hex | bigint | Uint8Array)[]) {
  return hashWords(fields.length + 1, (out) => {
    writeBytes32(out, 0, typeHash);
    fields.forEach((field, i) => {
      const at = 32 * i + 32;
      if (typeof field === "bigint") writeUint(out, at, field);
      else if (typeof field !== "string") out.set(field, at);
      else if (field.length === 42) writeAddress(out, at, field);
      else writeBytes32(out, at, field);
    });
  });
}
