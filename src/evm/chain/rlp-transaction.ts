/**
 * The bytes of a settlement transaction, signed or to be signed: an EIP-1559 (type 2) or an
 * EIP-155 legacy transaction with exactly the fields our sending code sets (chain, nonce, fees,
 * gas, to, value, data; no access list). Signing runs inside a key's lane, so its cost limits
 * settles per key; viem's general serializer, called twice per signature, was most of it. Any
 * other shape is left to viem (`undefined` here). Tested equal to viem's serializeTransaction.
 */
import type { Hex } from "viem";
import { bytesOfHex } from "./abi-words.js";

export interface SettlementTransaction {
  readonly type?: "eip1559" | "legacy" | undefined;
  readonly chainId?: number | undefined;
  readonly nonce?: number | undefined;
  readonly to?: Hex | null | undefined;
  readonly value?: bigint | undefined;
  readonly data?: Hex | undefined;
  readonly gas?: bigint | undefined;
  readonly maxFeePerGas?: bigint | undefined;
  readonly maxPriorityFeePerGas?: bigint | undefined;
  readonly gasPrice?: bigint | undefined;
}

export interface RawSignature {
  /** 32 bytes each. */
  readonly r: Uint8Array;
  readonly s: Uint8Array;
  readonly yParity: 0 | 1;
}

const KNOWN = new Set([
  "type",
  "chainId",
  "nonce",
  "to",
  "value",
  "data",
  "gas",
  "maxFeePerGas",
  "maxPriorityFeePerGas",
  "gasPrice",
]);

type Item = Uint8Array | readonly Item[];

/** A non-negative integer as RLP wants it: big-endian, no leading zeros, 0 as no bytes. */
function integer(value: bigint | number): Uint8Array {
  let n = BigInt(value);
  if (n < 0n) throw new RangeError("a transaction field is negative");
  const bytes: number[] = [];
  while (n > 0n) {
    bytes.push(Number(n & 0xffn));
    n >>= 8n;
  }
  return Uint8Array.from(bytes.reverse());
}

/** 32 bytes of r or s as an integer: leading zeros dropped. */
function word(bytes: Uint8Array): Uint8Array {
  let start = 0;
  while (start < bytes.length && bytes[start] === 0) start++;
  return bytes.subarray(start);
}

function lengthPrefix(length: number, short: number): Uint8Array {
  if (length < 56) return Uint8Array.of(short + length);
  const size = integer(length);
  return Uint8Array.of(short + 55 + size.length, ...size);
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const part of parts) total += part.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function rlp(item: Item): Uint8Array {
  if (item instanceof Uint8Array) {
    if (item.length === 1 && (item[0] as number) < 0x80) return item;
    return concat([lengthPrefix(item.length, 0x80), item]);
  }
  const body = concat(item.map(rlp));
  return concat([lengthPrefix(body.length, 0xc0), body]);
}

/**
 * The transaction's bytes (its signing payload when `signature` is absent), or undefined when it
 * has a field or a type this serializer does not write.
 */
export function settlementTransactionBytes(
  tx: SettlementTransaction,
  signature?: RawSignature,
): Uint8Array | undefined {
  for (const key of Object.keys(tx)) {
    if (!KNOWN.has(key) && (tx as Record<string, unknown>)[key] !== undefined) return undefined;
  }
  const chainId = tx.chainId;
  if (chainId === undefined || tx.nonce === undefined || tx.gas === undefined) return undefined;
  const to = tx.to ? bytesOfHex(tx.to) : new Uint8Array(0);
  const data = tx.data ? bytesOfHex(tx.data) : new Uint8Array(0);
  const value = integer(tx.value ?? 0n);
  const eip1559 = tx.type === "eip1559" || (tx.type === undefined && tx.maxFeePerGas !== undefined);
  if (eip1559) {
    if (tx.maxFeePerGas === undefined || tx.gasPrice !== undefined) return undefined;
    // viem refuses a tip above the fee cap: left to it, so it still does.
    if ((tx.maxPriorityFeePerGas ?? 0n) > tx.maxFeePerGas) return undefined;
    const fields: Item[] = [
      integer(chainId),
      integer(tx.nonce),
      integer(tx.maxPriorityFeePerGas ?? 0n),
      integer(tx.maxFeePerGas),
      integer(tx.gas),
      to,
      value,
      data,
      [],
    ];
    if (signature) fields.push(integer(signature.yParity), word(signature.r), word(signature.s));
    return concat([Uint8Array.of(0x02), rlp(fields)]);
  }
  const legacy = tx.type === "legacy" && tx.gasPrice !== undefined && tx.maxFeePerGas === undefined;
  if (!legacy || chainId <= 0) return undefined;
  const fields: Item[] = [
    integer(tx.nonce),
    integer(tx.gasPrice),
    integer(tx.gas),
    to,
    value,
    data,
  ];
  // EIP-155: the chain in the signing payload, and in v once signed.
  if (signature) {
    fields.push(
      integer(BigInt(chainId) * 2n + 35n + BigInt(signature.yParity)),
      word(signature.r),
      word(signature.s),
    );
  } else fields.push(integer(chainId), new Uint8Array(0), new Uint8Array(0));
  return rlp(fields);
}
