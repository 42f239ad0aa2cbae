/**
 * A payer is not on our side: every settle it can make us broadcast that reverts costs us gas.
 * Each test here is an attack tried on the devnet (issue 9), replayed against a real anvil with
 * payloads from the official x402 client, over real HTTP where the attack came over HTTP.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Address, createTestClient, createWalletClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import type { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import { Journal } from "../src/store/journal.js";
import { chainOf, payerHolding, tokenBalance } from "./helpers/chain.js";
import { facilitatorOn, postJson } from "./helpers/facilitator.js";
import { cancelAhead as cancelPayment } from "./helpers/sign.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

async function signedRequest(devnet: Devnet, payer: DevAccount, amount: bigint) {
  const requirements = requirementsV2(devnet, { amount: amount.toString() });
  return { payload: await clientPayload(payer, requirements), requirements };
}

const post = postJson;

describe("a payer racing its own balance", () => {
  let devnet: Devnet;
  let server: RunningServer;
  beforeAll(async () => {
    devnet = await startDevnet();
    server = await startServer(createHandler(facilitatorOn(devnet)), { port: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await devnet?.stop();
  });

  test("30 payments of its whole balance at once, 6 rounds: 6 land, 174 refused, nothing reverts", async () => {
    const rpc = chainOf(devnet);
    const us = devnet.facilitator.address;
    const sentBefore = await rpc.getTransactionCount({ address: us });
    const ethBefore = await rpc.getBalance({ address: us });
    const payeeBefore = await tokenBalance(devnet, devnet.payee.address);
    const codes: string[] = [];
    const hashes: Hex[] = [];

    for (let round = 0; round < 6; round++) {
      const payer = await payerHolding(devnet, 1_000n);
      const requests = await Promise.all(
        Array.from({ length: 30 }, () => signedRequest(devnet, payer, 1_000n)),
      );
      for (const r of requests) {
        // Each payment verifies on its own: the payer can cover any one of them.
        expect((await post(server, "/verify", r)).body).toMatchObject({ success: true });
      }
      const replies = await Promise.all(requests.map((r) => post(server, "/settle", r)));
      for (const reply of replies) {
        codes.push(reply.body.success ? "success" : String(reply.body.error));
        if (typeof reply.body.transactionHash === "string") {
          hashes.push(reply.body.transactionHash as Hex);
        }
      }
      expect(await tokenBalance(devnet, payer.address)).toBe(0n);
    }

    const receipts = await Promise.all(
      hashes.map((hash) => rpc.getTransactionReceipt({ hash }).catch(() => undefined)),
    );
    const reverted = receipts.filter((r) => r?.status === "reverted").length;
    const sent = (await rpc.getTransactionCount({ address: us })) - sentBefore;
    const gasPaid = ethBefore - (await rpc.getBalance({ address: us }));
    console.info(
      `hostile payer, 6 rounds of 30: ${codes.filter((c) => c === "success").length} paid, ` +
        `${codes.filter((c) => c === "insufficient_funds").length} refused, ${reverted} reverted, ` +
        `${sent} transactions sent, ${gasPaid} wei of gas paid`,
    );
    expect(reverted).toBe(0);
    expect(sent).toBe(6);
    expect(codes.filter((c) => c === "success")).toHaveLength(6);
    expect(codes.filter((c) => c !== "success")).toEqual(Array(174).fill("insufficient_funds"));
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + 6_000n);
  }, 120_000);

  test("a payer with room for two of three concurrent payments gets two", async () => {
    const payer = await payerHolding(devnet, 2_500n);
    const requests = await Promise.all(
      Array.from({ length: 3 }, () => signedRequest(devnet, payer, 1_000n)),
    );
    const replies = await Promise.all(requests.map((r) => post(server, "/settle", r)));
    const codes = replies.map((r) => (r.body.success ? "success" : r.body.error)).sort();
    const said = JSON.stringify(replies.map((r) => r.body));
    expect(codes, said).toEqual(["insufficient_funds", "success", "success"]);
    const refused = replies.find((r) => !r.body.success);
    expect(refused?.status).toBe(400);
    // The ledger reads nothing for its words: the token's symbol once a refusal before has read
    // it (this file's first test), its bare units otherwise.
    const usdc = (units: string) => `(${units}|[\\d.]+ USDC \\(${units} units\\))`;
    // The three race: the third is judged while the other two are in flight (held against it),
    // or after both landed (the 500 left, nothing held).
    expect(refused?.body.message).toMatch(
      new RegExp(
        `^the payer holds (${usdc("\\d+")}, ${usdc("\\d+")} of it is already being settled with us,|${usdc("500")}) and this payment needs ${usdc("1000")}$`,
      ),
    );
    expect(await tokenBalance(devnet, payer.address)).toBe(500n);
  });

  test("once its payments land, a payer with the balance again is served again", async () => {
    const payer = await payerHolding(devnet, 2_000n);
    for (let i = 0; i < 2; i++) {
      const reply = await post(server, "/settle", await signedRequest(devnet, payer, 1_000n));
      expect(reply.body).toMatchObject({ success: true });
    }
    expect(await tokenBalance(devnet, payer.address)).toBe(0n);
  });
});

describe("a payer whose settlements keep reverting", () => {
  let devnet: Devnet;
  let server: RunningServer;
  beforeAll(async () => {
    devnet = await startDevnet({ mining: "manual" });
    server = await startServer(createHandler(facilitatorOn(devnet)), { port: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await devnet?.stop();
  });

  const cancelAhead = (payer: DevAccount, nonce: Hex) => cancelPayment(devnet, payer, nonce);

  test("after 3 reverts it is refused with 429 payer_throttled and Retry-After; nothing is sent", async () => {
    const rpc = chainOf(devnet);
    const payer = devnet.payers[1] as DevAccount;
    const us = devnet.facilitator.address;
    for (let round = 0; round < 3; round++) {
      const request = await signedRequest(devnet, payer, 1_000n);
      const sentBefore = await rpc.getTransactionCount({ address: us, blockTag: "pending" });
      const settling = post(server, "/settle", request);
      // Our transaction is in the pool: now the payer cancels ahead of it.
      for (let i = 0; i < 100; i++) {
        const pending = await rpc.getTransactionCount({ address: us, blockTag: "pending" });
        if (pending > sentBefore) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const nonce = (request.payload.payload as { authorization: { nonce: Hex } }).authorization
        .nonce;
      await cancelAhead(payer, nonce);
      const reply = await settling;
      expect(reply.body).toMatchObject({ success: false, error: "settlement_failed" });
      expect(reply.body.message).toMatch(/reverted on chain/);
    }

    const sentBefore = await rpc.getTransactionCount({ address: us, blockTag: "pending" });
    const reply = await post(server, "/settle", await signedRequest(devnet, payer, 1_000n));
    expect(reply.status).toBe(429);
    expect(reply.body).toMatchObject({ success: false, error: "payer_throttled" });
    expect(Number(reply.retryAfter)).toBeGreaterThan(500);
    expect(await rpc.getTransactionCount({ address: us, blockTag: "pending" })).toBe(sentBefore);

    // Another payer is not held back by this one.
    const other = devnet.payers[2] as DevAccount;
    const otherSettle = post(server, "/settle", await signedRequest(devnet, other, 1_000n));
    for (let i = 0; i < 100; i++) {
      const pending = await rpc.getTransactionCount({ address: us, blockTag: "pending" });
      if (pending > sentBefore) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });
    expect((await otherSettle).body).toMatchObject({ success: true });
  }, 60_000);
  test("a server watches what it answered submitted for: that revert is charged too", async () => {
    const facilitator = facilitatorOn(devnet, { watchSubmitted: true, payerRevertLimit: 1 });
    const payer = devnet.payers[3] as DevAccount;
    const request = await signedRequest(devnet, payer, 1_000n);
    const { handleSettle } = await import("../src/protocol/respond.js");
    const submitted = await handleSettle(facilitator, request, { waitUntil: "submitted" });
    expect(submitted.body).toMatchObject({ success: true });
    const nonce = (request.payload.payload as { authorization: { nonce: Hex } }).authorization
      .nonce;
    await cancelAhead(payer, nonce);
    const receipt = await chainOf(devnet).getTransactionReceipt({
      hash: submitted.body.transactionHash as Hex,
    });
    expect(receipt.status).toBe("reverted");
    let answer: Record<string, unknown> = {};
    for (let i = 0; i < 50; i++) {
      const next = await signedRequest(devnet, payer, 1_000n);
      answer = (await handleSettle(facilitator, next, { waitUntil: "simulated" })).body;
      if (answer.error === "payer_throttled") break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(answer).toMatchObject({ success: false, error: "payer_throttled" });
  }, 30_000);
});

describe("an authorization someone else submitted first", () => {
  let devnet: Devnet;
  beforeAll(async () => {
    devnet = await startDevnet();
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  test("is reported as paid by another's transaction, never as our success", async () => {
    const payer = devnet.payers[0] as DevAccount;
    const request = await signedRequest(devnet, payer, 1_000n);
    const auth = (request.payload.payload as { authorization: Record<string, string> })
      .authorization;
    const signature = (request.payload.payload as { signature: Hex }).signature;
    // The payee (anyone) submits the signed authorization to the token itself.
    const wallet = createWalletClient({
      account: privateKeyToAccount(devnet.payee.privateKey),
      transport: http(devnet.rpcUrl),
    });
    const theirs = await wallet.writeContract({
      address: devnet.token.address,
      abi: testUsdcAbi,
      functionName: "transferWithAuthorization",
      args: [
        auth.from as Address,
        auth.to as Address,
        BigInt(auth.value as string),
        BigInt(auth.validAfter as string),
        BigInt(auth.validBefore as string),
        auth.nonce as Hex,
        signature,
      ],
      chain: null,
    });
    await chainOf(devnet).waitForTransactionReceipt({ hash: theirs, pollingInterval: 50 });
    const { handleSettle } = await import("../src/protocol/respond.js");
    const reply = (await handleSettle(facilitatorOn(devnet), request)).body;
    expect(reply).toMatchObject({ success: false, error: "nonce_already_used" });
    expect(reply.transactionHash).toBeUndefined();
    expect(String(reply.message)).toContain(
      `already paid ${devnet.payee.address} 0.001 USDC (1000 units) in ${theirs}`,
    );
    expect(String(reply.message)).toContain("the payer did pay");
    expect(String(reply.message)).toContain("not by this facilitator");
  });

  test("settled by our own key (a verify after the settle): says so, not 'not by this facilitator'", async () => {
    const payer = devnet.payers[1] as DevAccount;
    const request = await signedRequest(devnet, payer, 1_000n);
    const { handleSettle, handleVerify } = await import("../src/protocol/respond.js");
    const facilitator = facilitatorOn(devnet);
    const settled = (await handleSettle(facilitator, request)).body;
    expect(settled).toMatchObject({ success: true });
    const reply = (await handleVerify(facilitator, request)).body;
    expect(reply).toMatchObject({ success: false, error: "nonce_already_used" });
    expect(String(reply.message)).toContain(
      `in ${settled.transactionHash}, sent by ${devnet.facilitator.address.toLowerCase()} (a settlement key of this facilitator)`,
    );
    expect(String(reply.message)).not.toContain("not by this facilitator");
  });
});

describe("a reorg", () => {
  let devnet: Devnet;
  beforeAll(async () => {
    devnet = await startDevnet();
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
  const tempJournal = () =>
    path.join(mkdtempSync(path.join(os.tmpdir(), "facilitator-reorg-")), "journal.jsonl");

  async function settle(facilitator: Facilitator, request: unknown) {
    const { handleSettle } = await import("../src/protocol/respond.js");
    return (await handleSettle(facilitator, request)).body;
  }

  test("the retry of a reorged payment re-sends its bytes, lands, and is told it was answered (never a second success); later settles are not wedged", async () => {
    const facilitator = facilitatorOn(devnet, { confirmTimeoutMs: 10_000 });
    const payer = devnet.payers[0] as DevAccount;
    const payeeBefore = await tokenBalance(devnet, devnet.payee.address);
    const snapshot = await anvil().snapshot();
    const a = await signedRequest(devnet, payer, 1_000n);
    const first = await settle(facilitator, a);
    expect(first).toMatchObject({ success: true });
    await anvil().revert({ id: snapshot });
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore);

    // Its success was answered once: the bytes go out again, the success does not.
    const retry = await settle(facilitator, a);
    expect(retry).toMatchObject({
      success: false,
      error: "nonce_already_used",
      transactionHash: first.transactionHash,
    });
    const receipt = await chainOf(devnet).getTransactionReceipt({
      hash: retry.transactionHash as Hex,
    });
    expect(receipt.status).toBe("success");

    const started = Date.now();
    for (let i = 0; i < 2; i++) {
      const later = await settle(facilitator, await signedRequest(devnet, payer, 1_000n));
      expect(later).toMatchObject({ success: true });
    }
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + 3_000n);
    // And now that it is on the chain again, it is the journal's word that stands.
    expect(await settle(facilitator, a)).toMatchObject({
      success: false,
      error: "nonce_already_used",
    });
  }, 30_000);

  test("a settle queued behind the reorged nonce fills the hole with the dropped payment and lands", async () => {
    const facilitator = facilitatorOn(devnet, { confirmTimeoutMs: 10_000 });
    const payer = devnet.payers[1] as DevAccount;
    const payeeBefore = await tokenBalance(devnet, devnet.payee.address);
    // Warm the lane's nonce first, so the reorg leaves it one past the chain.
    expect(await settle(facilitator, await signedRequest(devnet, payer, 1_000n))).toMatchObject({
      success: true,
    });
    const snapshot = await anvil().snapshot();
    const a = await signedRequest(devnet, payer, 1_000n);
    const first = await settle(facilitator, a);
    expect(first).toMatchObject({ success: true });
    await anvil().revert({ id: snapshot });

    const b = await settle(facilitator, await signedRequest(devnet, payer, 1_000n));
    expect(b).toMatchObject({ success: true });
    // The hole B waited behind was filled with A's own bytes: A is paid again.
    const again = await chainOf(devnet).getTransactionReceipt({
      hash: first.transactionHash as Hex,
    });
    expect(again.status).toBe("success");
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + 3_000n);
    expect(await settle(facilitator, a)).toMatchObject({
      success: false,
      error: "nonce_already_used",
      message: expect.stringContaining(first.transactionHash as string),
    });
  }, 30_000);

  test("a process without the dropped bytes settles the payment afresh, once, and never answers a second success", async () => {
    const journal = tempJournal();
    const payer = devnet.payers[2] as DevAccount;
    const payeeBefore = await tokenBalance(devnet, devnet.payee.address);
    const snapshot = await anvil().snapshot();
    const a = await signedRequest(devnet, payer, 1_000n);
    const before = facilitatorOn(devnet, { journal: new Journal(journal) });
    const first = await settle(before, a);
    expect(first).toMatchObject({ success: true });
    before.journal.close();
    await anvil().revert({ id: snapshot });
    // A reorg replaces the chain with a longer one: its head is newer than the answer was. (A node
    // whose head is older may only lag behind the block: test/provider-lag.test.ts.)
    await anvil().increaseTime({ seconds: 5 });
    await anvil().mine({ blocks: 1 });

    const after = facilitatorOn(devnet, { journal: new Journal(journal) });
    const retry = await settle(after, a);
    // Its success was answered once already: the new transaction's hash comes with a refusal.
    expect(retry).toMatchObject({ success: false, error: "nonce_already_used" });
    expect(retry.transactionHash).not.toBe(first.transactionHash);
    const landed = await chainOf(devnet).getTransactionReceipt({
      hash: retry.transactionHash as Hex,
    });
    expect(landed.status).toBe("success");
    // The journal says the first transaction was dropped before the payment was settled again.
    expect(readFileSync(journal, "utf8")).toMatch(/"state":"dropped"/);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + 1_000n);
    after.journal.close();
  }, 30_000);

  test("with confirmations: 3, confirmed answers once the receipt is 3 blocks deep", async () => {
    const facilitator = facilitatorOn(devnet, { confirmations: 3, confirmTimeoutMs: 15_000 });
    const reply = await settle(
      facilitator,
      await signedRequest(devnet, devnet.payers[3] as DevAccount, 1_000n),
    );
    expect(reply).toMatchObject({ success: true });
    const rpc = chainOf(devnet);
    const receipt = await rpc.getTransactionReceipt({ hash: reply.transactionHash as Hex });
    expect(await rpc.getBlockNumber({ cacheTime: 0 })).toBeGreaterThanOrEqual(
      receipt.blockNumber + 2n,
    );
  }, 30_000);
});
