/**
 * Settlement transactions serialized by our own RLP (src/evm/chain/rlp-transaction.ts) are
 * viem's serializeTransaction, byte for byte, signed and unsigned, across the field sizes RLP
 * encodes differently (zero, one byte under 0x80, 55 and 56 bytes of data, long data); and a
 * settlement account signs exactly what viem's account signs.
 */
import { randomBytes } from "node:crypto";
import { bytesToHex, type Hex, serializeTransaction } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, test } from "vitest";
import { encodeSettlementTransaction } from "../src/evm/chain/rlp-transaction.js";
import { settlementAccount, useWasmSecp256k1 } from "../src/evm/chain/secp256k1.js";

const hex = (length: number) => bytesToHex(new Uint8Array(randomBytes(length)));
const pick = <T>(values: readonly T[]) => values[Math.floor(Math.random() * values.length)] as T;
const amounts = [0n, 1n, 0x7fn, 0x80n, 0xffn, 256n, 10n ** 18n, 2n ** 255n];
const dataSizes = [0, 1, 20, 55, 56, 57, 292, 1000];

/** A tip at most the fee cap, as viem requires. */
function eip1559<T>(common: T, maxFeePerGas: bigint) {
  const tips = amounts.filter((a) => a <= maxFeePerGas);
  return { ...common, type: "eip1559" as const, maxFeePerGas, maxPriorityFeePerGas: pick(tips) };
}

function randomTransaction(i: number) {
  const common = {
    chainId: pick([1, 8453, 84532, 31337, 11142220]),
    nonce: pick([0, 1, 127, 128, 255, 256, 65_536, i]),
    to: hex(20) as Hex,
    value: pick(amounts),
    data: hex(pick(dataSizes)) as Hex,
    gas: pick([21_000n, 90_000n, 1n, 30_000_000n]),
  };
  return i % 3 === 0
    ? { ...common, type: "legacy" as const, gasPrice: pick(amounts.slice(0, 7)) }
    : eip1559(common, pick(amounts.slice(0, 7)));
}

describe("settlement transaction bytes", () => {
  test("equal viem's serializeTransaction, unsigned and signed", () => {
    for (let i = 0; i < 400; i++) {
      const tx = randomTransaction(i);
      const encoded = encodeSettlementTransaction(tx);
      expect(
        bytesToHex(encoded?.unsigned as Uint8Array),
        JSON.stringify(tx, (_, v) => (typeof v === "bigint" ? `${v}` : v)),
      ).toBe(serializeTransaction(tx));
      const r = hex(32) as Hex;
      const s = i % 5 === 0 ? (`0x00${hex(31).slice(2)}` as Hex) : (hex(32) as Hex);
      const yParity = (i % 2) as 0 | 1;
      const signed = encoded?.signed({
        r: Buffer.from(r.slice(2), "hex"),
        s: Buffer.from(s.slice(2), "hex"),
        yParity,
      });
      expect(bytesToHex(signed as Uint8Array)).toBe(
        serializeTransaction(tx, { r, s, yParity, v: BigInt(27 + yParity) }),
      );
    }
  });

  test("a shape it does not write is left to viem", () => {
    const tx = randomTransaction(1);
    expect(
      encodeSettlementTransaction({ ...tx, maxFeePerGas: 1n, maxPriorityFeePerGas: 2n }),
    ).toBeUndefined();
    expect(encodeSettlementTransaction({ ...tx, accessList: [] } as never)).toBeUndefined();
    expect(encodeSettlementTransaction({ ...tx, chainId: undefined })).toBeUndefined();
    expect(encodeSettlementTransaction({ ...tx, type: "eip2930" } as never)).toBeUndefined();
  });
});

describe("a settlement account with libsecp256k1", () => {
  beforeAll(() => useWasmSecp256k1());

  test("signs exactly what viem's account signs", async () => {
    for (let i = 0; i < 60; i++) {
      const key = generatePrivateKey();
      const tx = randomTransaction(i);
      expect(await settlementAccount(key).signTransaction(tx)).toBe(
        await privateKeyToAccount(key).signTransaction(tx),
      );
    }
  });
});
