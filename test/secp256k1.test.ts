/** The WebAssembly secp256k1 paths give exactly what viem's pure-JS ones give. */
import { keccak256, parseTransaction, recoverAddress, toHex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { settlementAccount, useWasmSecp256k1 } from "../src/evm/chain/secp256k1.js";

describe("settlement signatures", () => {
  test("libsecp256k1 signs settlement transactions byte for byte like viem", async () => {
    const key = generatePrivateKey();
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
    const before = await Promise.all(
      transactions.map((tx) => settlementAccount(key).signTransaction(tx)),
    );
    await useWasmSecp256k1();
    const account = settlementAccount(key);
    expect(account.address).toBe(privateKeyToAccount(key).address);
    for (const [i, tx] of transactions.entries()) {
      const signed = await account.signTransaction(tx);
      expect(signed).toBe(await privateKeyToAccount(key).signTransaction(tx));
      expect(signed).toBe(before[i]);
      const parsed = parseTransaction(signed);
      expect(parsed.nonce).toBe(tx.nonce);
    }
    // And a recovered signer is the account.
    const hash = keccak256(toHex("x402"));
    const signature = await privateKeyToAccount(key).sign({ hash });
    expect(await recoverAddress({ hash, signature })).toBe(account.address);
  });
});
