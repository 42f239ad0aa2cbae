/** Serializes our settlement transactions (EIP-1559 or EIP-155, exactly our fields): signing
 * runs in a key's lane and viem's serializer was most of its cost. */
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

const KNOWN = new Set(
  "type chainId nonce to value data gas maxFeePerGas maxPriorityFeePerGas gasPrice".split(" "),
);

/** An RLP item of a transaction: a byte string, or `null` for the empty access list. */
type Field = Uint8Array | null;

const EMPTY = new Uint8Array(0);

/** A non-negative integer as RLP wants it: big-endian, no leading zeros, 0 as no bytes. */
function integer(value: bigint | number): Uint8Array {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) {
    const bytes: number[] = [];
    for (let n = value; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
    return Uint8Array.from(bytes);
  }
  const n = BigInt(value);
  if (n < 0n) throw new RangeError("a transaction field is negative");
  if (n === 0n) return EMPTY;
  const digits = n.toString(16);
  return bytesOfHex(digits.length % 2 === 0 ? `0x${digits}` : `0x0${digits}`);
}

function word(bytes: Uint8Array): Uint8Array {
  let start = 0;
  while (start < bytes.length && bytes[start] === 0) start++;
  return bytes.subarray(start);
}

const byteLength = (n: number) => {
  let size = 0;
  for (; n > 0; n = Math.floor(n / 256)) size++;
  return size;
};

/** A byte string under 0x80 on its own is its own encoding; else a length prefix comes first. */
const bare = (item: Uint8Array) => item.length === 1 && (item[0] as number) < 0x80;
const headerSize = (length: number) => (length < 56 ? 1 : 1 + byteLength(length));

function writeHeader(out: Uint8Array, at: number, length: number, short: number): number {
  if (length < 56) {
    out[at] = short + length;
    return at + 1;
  }
  const size = byteLength(length);
  out[at] = short + 55 + size;
  for (let i = size, n = length; i >= 1; i--, n = Math.floor(n / 256)) out[at + i] = n % 256;
  return at + 1 + size;
}

/** `typeByte` (if any) and the RLP list of `fields`, written into one buffer. */
function encodeList(typeByte: number | undefined, fields: readonly Field[]): Uint8Array {
  let payload = 0;
  for (const field of fields) {
    payload += field === null ? 1 : bare(field) ? 1 : headerSize(field.length) + field.length;
  }
  const out = new Uint8Array((typeByte === undefined ? 0 : 1) + headerSize(payload) + payload);
  let at = 0;
  if (typeByte !== undefined) out[at++] = typeByte;
  at = writeHeader(out, at, payload, 0xc0);
  for (const field of fields) {
    if (field === null) {
      out[at++] = 0xc0;
      continue;
    }
    if (!bare(field)) at = writeHeader(out, at, field.length, 0x80);
    out.set(field, at);
    at += field.length;
  }
  return out;
}

/** A settlement transaction's fields, encoded once: its bytes to sign, and signed. */
export interface EncodedSettlementTransaction {
  readonly unsigned: Uint8Array;
  signed(signature: RawSignature): Uint8Array;
}

/** The fields encoded once, or undefined for a field or type this serializer does not write. */
export function encodeSettlementTransaction(
  tx: SettlementTransaction,
): EncodedSettlementTransaction | undefined {
  for (const key of Object.keys(tx)) {
    if (!KNOWN.has(key) && (tx as Record<string, unknown>)[key] !== undefined) return undefined;
  }
  const chainId = tx.chainId;
  if (chainId === undefined || tx.nonce === undefined || tx.gas === undefined) return undefined;
  const to = tx.to ? bytesOfHex(tx.to) : EMPTY;
  const data = tx.data ? bytesOfHex(tx.data) : EMPTY;
  const value = integer(tx.value ?? 0n);
  const eip1559 = tx.type === "eip1559" || (tx.type === undefined && tx.maxFeePerGas !== undefined);
  if (eip1559) {
    if (tx.maxFeePerGas === undefined || tx.gasPrice !== undefined) return undefined;
    // viem refuses a tip above the fee cap: left to it, so it still does.
    if ((tx.maxPriorityFeePerGas ?? 0n) > tx.maxFeePerGas) return undefined;
    const fields: Field[] = [
      integer(chainId),
      integer(tx.nonce),
      integer(tx.maxPriorityFeePerGas ?? 0n),
      integer(tx.maxFeePerGas),
      integer(tx.gas),
      to,
      value,
      data,
      null,
    ];
    return {
      unsigned: encodeList(0x02, fields),
      signed: (signature) =>
        encodeList(0x02, [
          ...fields,
          integer(signature.yParity),
          word(signature.r),
          word(signature.s),
        ]),
    };
  }
  const legacy = tx.type === "legacy" && tx.gasPrice !== undefined && tx.maxFeePerGas === undefined;
  if (!legacy || chainId <= 0) return undefined;
  const fields: Field[] = [
    integer(tx.nonce),
    integer(tx.gasPrice),
    integer(tx.gas),
    to,
    value,
    data,
  ];
  // EIP-155: the chain in the signing payload, and in v once signed.
  return {
    unsigned: encodeList(undefined, [...fields, integer(chainId), EMPTY, EMPTY]),
    signed: (signature) =>
      encodeList(undefined, [
        ...fields,
        integer(BigInt(chainId) * 2n + 35n + BigInt(signature.yParity)),
        word(signature.r),
        word(signature.s),
      ]),
  };
}
