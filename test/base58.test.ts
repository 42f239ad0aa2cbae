/** Our base58 against @solana/kit's, on random bytes with leading zeros; a non-base58 text is refused. */
import { getBase58Decoder, getBase58Encoder } from "@solana/kit";
import { expect, test } from "vitest";
import { base58ToBytes, bytesToBase58 } from "../src/protocol/base58.js";

test("base58 agrees with kit", () => {
  for (let i = 0; i < 500; i++) {
    const n = i % 70;
    const bytes = new Uint8Array(n).map(() =>
      Math.random() < 0.2 ? 0 : Math.floor(Math.random() * 256),
    );
    const ours = bytesToBase58(bytes);
    expect(ours).toBe(getBase58Decoder().decode(bytes));
    expect([...(base58ToBytes(ours) ?? [])]).toEqual([...getBase58Encoder().encode(ours)]);
  }
  expect(base58ToBytes("0OIl")).toBeUndefined();
});
