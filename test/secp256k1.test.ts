/** The native and WebAssembly secp256k1 paths give exactly what viem's pure-JS ones give. */
import { keccak256, type PublicClient, parseTransaction, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import {
  recoverSigner,
  secp256k1Backend,
  settlementAccount,
  useWasmSecp256k1,
} from "../src/evm/chain/secp256k1.js";

const transactions = [
  {
    chainId: 84532,
    type: "eip1559" as const,
    to: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" as const,
    data: toHex("transferWithAuthorization"),
    gas: 90_000n,
    nonce: 7,
    maxFeePerGas: 1_500_000_000n,
    maxPriorityFeePerGas: 1_000_000n,
  },
  {
    chainId: 31337,
    type: "legacy" as const,
    to: "0x5FbDB2315678afecb367f032d93F642f64180aa3" as const,
    data: "0x" as const,
    gas: 21_000n,
    nonce: 0,
    gasPrice: 3n,
  },
];

/** No chain is asked once libsecp256k1 is loaded: a client that answers nothing proves it. */
const noChain = {
  call: () => Promise.reject(new Error("asked the chain")),
} as unknown as PublicClient;

describe.each([
  { backend: "wasm", native: false },
  { backend: "native", native: true },
])("settlement signatures and recovery with libsecp256k1 ($backend)", ({ backend, native }) => {
  test("signs settlement transactions byte for byte like viem, and recovers payers' signers", async () => {
    const key = generatePrivateKey();
    await useWasmSecp256k1({ native });
    // The machines this project runs on (linux-x64) have the prebuilt native addon.
    expect(secp256k1Backend).toBe(backend);
    const account = settlementAccount(key);
    expect(account.address).toBe(privateKeyToAccount(key).address);
    for (const tx of transactions) {
      const signed = await account.signTransaction(tx);
      expect(signed).toBe(await privateKeyToAccount(key).signTransaction(tx));
      expect(parseTransaction(signed).nonce).toBe(tx.nonce);
    }
    for (let i = 0; i < 20; i++) {
      const hash = keccak256(toHex(`x402 ${i}`));
      const signature = await privateKeyToAccount(key).sign({ hash });
      expect(await recoverSigner(noChain, hash, signature)).toBe(account.address);
      // A bare recovery bit (0/1) as v, as viem accepts.
      const bare: `0x${string}` = `0x${signature.slice(2, 130)}${signature.endsWith("1b") ? "00" : "01"}`;
      expect(await recoverSigner(noChain, hash, bare)).toBe(account.address);
    }
    // Recovered again (a settle after its verify), the same signer; the other recovery bit, the
    // same r and s, is someone else's signature.
    for (let i = 0; i < 20; i++) {
      const hash = keccak256(toHex(`x402 ${i}`));
      const signature = await privateKeyToAccount(key).sign({ hash });
      expect(await recoverSigner(noChain, hash, signature)).toBe(account.address);
      const flipped: `0x${string}` = `0x${signature.slice(2, 130)}${signature.endsWith("1b") ? "1c" : "1b"}`;
      expect(await recoverSigner(noChain, hash, flipped)).not.toBe(account.address);
      expect(await recoverSigner(noChain, hash, flipped)).not.toBe(account.address);
    }
    // A signature of another digest recovers someone else, or no one.
    const other = await privateKeyToAccount(key).sign({ hash: keccak256(toHex("other")) });
    expect(await recoverSigner(noChain, keccak256(toHex("x402 0")), other)).not.toBe(
      account.address,
    );
  });
});
