/**
 * The local Solana devnet (litesvm behind a JSON-RPC server answering as Solana devnet), checked
 * with the official x402 SVM client and facilitator (@x402/svm 2.27) against it, unchanged.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  associatedTokenAddress,
  DEVNET_GENESIS_HASH,
  PAYER_USDC_BALANCE,
  type SvmDevnet,
  startSvmDevnet,
} from "../src/svm/devnet/index.js";
import {
  referenceSvmFacilitator,
  svmClientPayload,
  svmLamports,
  svmRequirementsV2,
  svmRpc,
  svmTokenBalance,
} from "./helpers/svm-devnet.js";

let devnet: SvmDevnet;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "svm-devnet-"));
  devnet = await startSvmDevnet({ slotMs: 100 });
});

afterAll(async () => {
  await devnet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const tokenBalance = (owner: string) => svmTokenBalance(devnet, owner, "confirmed");

const lamports = (address: string) => svmLamports(devnet, address, "finalized");

describe("JSON-RPC basics", () => {
  it("answers as Solana devnet", async () => {
    expect((await svmRpc(devnet, "getGenesisHash")).result).toBe(DEVNET_GENESIS_HASH);
    expect(devnet.network).toBe("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1");
    expect((await svmRpc(devnet, "getHealth")).result).toBe("ok");
  });

  it("advances slots, confirmed behind processed, finalized further behind", async () => {
    const first = (await svmRpc(devnet, "getSlot", [{ commitment: "processed" }])).result as number;
    await new Promise((resolve) => setTimeout(resolve, 350));
    const later = (await svmRpc(devnet, "getSlot", [{ commitment: "processed" }])).result as number;
    expect(later).toBeGreaterThan(first);
    const confirmed = (await svmRpc(devnet, "getSlot", [{ commitment: "confirmed" }]))
      .result as number;
    const finalized = (await svmRpc(devnet, "getSlot")).result as number;
    expect(confirmed).toBeLessThanOrEqual(later);
    expect(finalized).toBeLessThanOrEqual(confirmed);
  });

  it("names an unknown method in a -32601 error", async () => {
    const { error } = await svmRpc(devnet, "getEverything");
    expect(error).toEqual({ code: -32601, message: "Method not found: getEverything" });
  });

  it("answers a malformed body with a parse error, and keeps serving", async () => {
    const response = await fetch(devnet.rpcUrl, { method: "POST", body: "{not json" });
    expect(await response.json()).toEqual({
      jsonrpc: "2.0",
      error: { code: -32700, message: "Parse error" },
      id: null,
    });
    const big = await fetch(devnet.rpcUrl, { method: "POST", body: "x".repeat(2 * 1024 * 1024) });
    expect(big.status).toBe(413);
    expect((await svmRpc(devnet, "getHealth")).result).toBe("ok");
  });

  it("airdrops SOL, twice in one slot too, with a status per airdrop", async () => {
    const address = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";
    const first = await svmRpc(devnet, "requestAirdrop", [address, 1_000_000_000]);
    const second = await svmRpc(devnet, "requestAirdrop", [address, 1_000_000_000]);
    expect(first.result).not.toBe(second.result);
    expect(await lamports(address)).toBe(2_000_000_000n);
    const { result } = await svmRpc(devnet, "getSignatureStatuses", [[first.result, "1111"]]);
    expect((result as { value: unknown[] }).value).toEqual([
      expect.objectContaining({ err: null, status: { Ok: null } }),
      null,
    ]);
  });

  it("refuses bad params with -32602", async () => {
    expect((await svmRpc(devnet, "getAccountInfo", [42])).error?.code).toBe(-32602);
    expect((await svmRpc(devnet, "getSlot", [{ commitment: "soon" }])).error?.code).toBe(-32602);
    expect(
      (await svmRpc(devnet, "sendTransaction", ["AAAA", { encoding: "base64" }])).error?.code,
    ).toBe(-32602);
  });

  it("answers batches in order, an invalid member as an invalid request", async () => {
    const response = await fetch(devnet.rpcUrl, {
      method: "POST",
      body: JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "getGenesisHash" },
        { id: 2, method: "getHealth" },
        { jsonrpc: "2.0", id: 3, method: "getBalance", params: [devnet.feePayer.address] },
      ]),
    });
    const answers = (await response.json()) as Array<Record<string, unknown>>;
    expect(answers.map((a) => a.id)).toEqual([1, 2, 3]);
    expect(answers[0]?.result).toBe(DEVNET_GENESIS_HASH);
    expect(answers[1]?.error).toMatchObject({ code: -32600 });
    expect(answers[2]?.result).toMatchObject({ value: expect.any(Number) });
  });
});

describe("the official @x402/svm client and facilitator against the devnet", () => {
  it("verifies and settles an exact v2 payment; the payee is paid exactly once", async () => {
    const [payer] = devnet.payers;
    if (!payer) throw new Error("no payer");
    const requirements = svmRequirementsV2(devnet, { amount: "12345" });
    const payload = await svmClientPayload(devnet, payer, requirements);
    const facilitator = await referenceSvmFacilitator(devnet);
    const before = await tokenBalance(devnet.payee.address);
    const lamportsBefore = await lamports(devnet.feePayer.address);

    const verdict = await facilitator.verify(payload, requirements as never);
    expect(verdict).toMatchObject({ isValid: true, payer: payer.address });

    const settled = await facilitator.settle(payload, requirements as never);
    expect(settled).toMatchObject({ success: true, network: devnet.network, payer: payer.address });
    expect(settled.transaction).toMatch(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/);
    expect(await tokenBalance(devnet.payee.address)).toBe(before + 12345n);
    expect(await tokenBalance(payer.address)).toBe(PAYER_USDC_BALANCE - 12345n);
    // The fee payer paid the fee the node reports for the transaction, and nothing else.
    const { result: landed } = await svmRpc(devnet, "getTransaction", [
      settled.transaction,
      { encoding: "base64", commitment: "confirmed", maxSupportedTransactionVersion: 0 },
    ]);
    const fee = BigInt((landed as { meta: { fee: number } }).meta.fee);
    expect(fee).toBeGreaterThanOrEqual(10_000n);
    expect(lamportsBefore - (await lamports(devnet.feePayer.address))).toBe(fee);

    const again = await facilitator.settle(payload, requirements as never);
    expect(again).toMatchObject({ success: false, errorReason: "duplicate_settlement" });
    // A fresh facilitator (no in-memory cache) is refused by the cluster: the message landed.
    const fresh = await referenceSvmFacilitator(devnet);
    const replay = await fresh.verify(payload, requirements as never);
    expect(replay).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_svm_transaction_simulation_failed",
    });
    expect(replay.invalidMessage).toContain("AlreadyProcessed");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await tokenBalance(devnet.payee.address)).toBe(before + 12345n);
  });

  it("refuses at verify a payment for more than the payer holds, with the reference's reason", async () => {
    const payer = devnet.payers[1];
    if (!payer) throw new Error("no payer");
    const requirements = svmRequirementsV2(devnet, {
      amount: (PAYER_USDC_BALANCE + 1n).toString(),
    });
    const payload = await svmClientPayload(devnet, payer, requirements);
    const facilitator = await referenceSvmFacilitator(devnet);
    const verdict = await facilitator.verify(payload, requirements as never);
    expect(verdict).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_svm_transaction_simulation_failed",
    });
    // SPL Token's error 1 is InsufficientFunds, raised by the TransferChecked (instruction 2).
    expect(verdict.invalidMessage).toContain('{"InstructionError":["2",{"Custom":"1"}]}');
  });
});

describe("blockhashes", () => {
  it("refuses a payment whose blockhash is more than 150 blocks old", async () => {
    const payer = devnet.payers[1];
    if (!payer) throw new Error("no payer");
    const requirements = svmRequirementsV2(devnet, { amount: "1" });
    const payload = await svmClientPayload(devnet, payer, requirements);
    for (let i = 0; i < 160; i++) devnet.cluster.tick();
    const verdict = await (await referenceSvmFacilitator(devnet)).verify(
      payload,
      requirements as never,
    );
    expect(verdict).toMatchObject({
      isValid: false,
      invalidReason: "invalid_exact_svm_transaction_simulation_failed",
    });
    expect(verdict.invalidMessage).toContain("BlockhashNotFound");
  });
});

describe("state kept in a directory", () => {
  it("restores balances, the slot and landed transactions after a restart", async () => {
    const first = await startSvmDevnet({ dir, slotMs: 50 });
    let stopped = false;
    try {
      const payer = first.payers[2];
      if (!payer) throw new Error("no payer");
      const requirements = svmRequirementsV2(first, { amount: "777" });
      const payload = await svmClientPayload(first, payer, requirements);
      const settled = await (await referenceSvmFacilitator(first)).settle(
        payload,
        requirements as never,
      );
      expect(settled.success).toBe(true);
      const slot = first.cluster.clock.slot;
      await first.stop();
      stopped = true;

      const second = await startSvmDevnet({ dir, slotMs: 50 });
      try {
        expect(second.cluster.restored).toBe(true);
        expect(second.cluster.clock.slot).toBeGreaterThanOrEqual(slot);
        const ata = await associatedTokenAddress(payer.address);
        const { result } = await svmRpc(second, "getTokenAccountBalance", [ata]);
        expect((result as { value: { amount: string } }).value.amount).toBe(
          (PAYER_USDC_BALANCE - 777n).toString(),
        );
        const statuses = await svmRpc(second, "getSignatureStatuses", [[settled.transaction]]);
        expect((statuses.result as { value: unknown[] }).value[0]).toMatchObject({ err: null });
        // The blockhash it was signed with may have aged, but the message is known as landed.
        const replay = await (await referenceSvmFacilitator(second)).verify(
          payload,
          requirements as never,
        );
        expect(replay.isValid).toBe(false);
      } finally {
        await second.stop();
      }
    } finally {
      if (!stopped) await first.stop();
    }
  });
});
