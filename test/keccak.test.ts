/**
 * The hashing every verify does, written for speed (src/evm/chain/keccak.ts, abi-words.ts, the
 * EIP-3009 and upto digests, the recovered signer's address): equal to viem's general-purpose functions on
 * random inputs and at the edges (empty input, block boundaries, the largest words).
 */
import { randomBytes } from "node:crypto";
import {
  type Address,
  bytesToHex,
  encodeAbiParameters,
  getAddress,
  type Hex,
  hashTypedData,
  isAddress,
  keccak256,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { writeAddress, writeBytes32, writeUint } from "../src/evm/chain/abi-words.js";
import { checksumAddress, hasValidChecksum } from "../src/evm/chain/address.js";
import { keccak256Hex } from "../src/evm/chain/keccak.js";
import { addressOfPublicKey } from "../src/evm/chain/secp256k1.js";
import {
  authorizationDigest,
  transferWithAuthorizationTypedData,
} from "../src/evm/exact/eip3009-encoding.js";
import { PERMIT2_ADDRESS } from "../src/evm/exact/permit2-encoding.js";
import { uptoDigest, uptoWitnessTypes } from "../src/evm/upto/encoding.js";

const random = (length: number) => new Uint8Array(randomBytes(length));
const randomHex = (length: number) => bytesToHex(random(length));
/** An address with its letters in random case: the digest must not depend on it. */
const anyCase = (address: string) =>
  `0x${[...address.slice(2)].map((c) => (Math.random() < 0.5 ? c.toUpperCase() : c)).join("")}` as Address;

describe("keccak256", () => {
  test("equals viem's for every length up to three blocks and past", () => {
    for (let length = 0; length <= 3 * 136 + 2; length++) {
      const data = random(length);
      expect(keccak256Hex(data), `length ${length}`).toBe(keccak256(data));
    }
    const large = random(10_000);
    expect(keccak256Hex(large)).toBe(keccak256(large));
  });

  test("the known empty-input hash", () => {
    expect(keccak256Hex(new Uint8Array(0))).toBe(
      "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
    );
  });
});

describe("ABI words", () => {
  test("equal encodeAbiParameters for address, bytes32 and uint at their edges", () => {
    const values = [0n, 1n, 255n, 256n, 2n ** 64n, 2n ** 255n + 7n, 2n ** 256n - 1n];
    for (const value of values) {
      const address = randomHex(20) as Address;
      const word = randomHex(32);
      const out = new Uint8Array(96);
      writeAddress(out, 0, anyCase(address));
      writeBytes32(out, 32, word);
      writeUint(out, 64, value);
      expect(bytesToHex(out)).toBe(
        encodeAbiParameters(
          [{ type: "address" }, { type: "bytes32" }, { type: "uint256" }],
          [getAddress(address), word, value],
        ),
      );
    }
  });

  test("refuse what their type cannot hold, as encodeAbiParameters does", () => {
    const out = new Uint8Array(32);
    expect(() => writeUint(out, 0, 2n ** 256n)).toThrow(RangeError);
    expect(() => writeUint(out, 0, -1n)).toThrow(RangeError);
    expect(() => writeUint(out, 0, 2n ** 40n, 40)).toThrow(RangeError);
    expect(() => writeAddress(out, 0, "0x1234" as Address)).toThrow(RangeError);
    expect(() => writeAddress(out, 0, `0x${"zz".repeat(20)}` as Address)).toThrow(RangeError);
    expect(() => writeBytes32(out, 0, `0x${"00".repeat(31)}` as Hex)).toThrow(RangeError);
  });
});

describe("the EIP-3009 digest", () => {
  test("equals hashTypedData on random authorizations", () => {
    for (let i = 0; i < 200; i++) {
      const domain = {
        name: i % 2 ? "USD Coin" : "USDC",
        version: String(1 + (i % 3)),
        chainId: 1 + (i % 5) * 84_531,
        verifyingContract: randomHex(20) as Address,
      };
      const message = {
        from: anyCase(randomHex(20)),
        to: anyCase(randomHex(20)),
        value: BigInt(randomHex(1 + (i % 32))),
        validAfter: BigInt(i),
        validBefore: i % 7 === 0 ? 2n ** 256n - 1n : BigInt(randomHex(8)),
        nonce: randomHex(32),
      };
      const checksummed = {
        ...message,
        from: getAddress(message.from),
        to: getAddress(message.to),
      };
      expect(authorizationDigest(domain, message)).toBe(
        hashTypedData(transferWithAuthorizationTypedData(domain, checksummed)),
      );
    }
  });
});

describe("the address of a public key", () => {
  test("is viem's checksummed address of the key's account", () => {
    for (let i = 0; i < 50; i++) {
      const account = privateKeyToAccount(randomHex(32));
      const publicKey = Uint8Array.from(Buffer.from(account.publicKey.slice(2), "hex"));
      expect(addressOfPublicKey(publicKey)).toBe(account.address);
    }
  });
});

describe("the upto (Permit2 witness) digest", () => {
  test("equals hashTypedData over the upto witness types", () => {
    const random = () => getAddress(randomHex(20));
    const big = () => BigInt(randomHex(1 + Math.floor(Math.random() * 32)));
    for (const chainId of [1, 8453, 31337, 84532]) {
      for (let i = 0; i < 10; i++) {
        const authorization = {
          from: random(),
          permitted: { token: random(), amount: i === 0 ? 2n ** 256n - 1n : big() },
          spender: random(),
          nonce: big(),
          deadline: big(),
          witness: { to: random(), facilitator: random(), validAfter: i === 1 ? 0n : big() },
        };
        const { from: _from, ...message } = authorization;
        expect(uptoDigest(chainId, authorization)).toBe(
          hashTypedData({
            domain: { name: "Permit2", chainId, verifyingContract: PERMIT2_ADDRESS },
            types: uptoWitnessTypes,
            primaryType: "PermitWitnessTransferFrom",
            message,
          }),
        );
      }
    }
  });
});

describe("EIP-55 addresses", () => {
  test("checksums and their checks agree with viem's getAddress and isAddress", () => {
    for (let i = 0; i < 300; i++) {
      const lower = randomHex(20);
      const good = getAddress(lower);
      expect(checksumAddress(lower.slice(2))).toBe(good);
      const flipped = good.replace(/[a-f]/, (c) => c.toUpperCase()) as Address;
      const upper = `0x${lower.slice(2).toUpperCase()}`;
      for (const value of [lower, good, flipped, upper, lower.slice(0, 30), `${good}0`, "0x", ""]) {
        expect(hasValidChecksum(value), value).toBe(isAddress(value, { strict: true }));
      }
    }
  });

  test("stays right past the addresses it remembers, and for one met again", () => {
    const first = randomHex(20);
    expect(checksumAddress(first.slice(2))).toBe(getAddress(first));
    for (let i = 0; i < 5_000; i++) {
      const lower = randomHex(20);
      expect(checksumAddress(lower.slice(2))).toBe(getAddress(lower));
    }
    expect(checksumAddress(first.slice(2))).toBe(getAddress(first));
  });
});
