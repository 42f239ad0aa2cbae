/**
 * Money is sent once: concurrent duplicates, many settles from one key or a pool, settlements that
 * time out and are picked up again from the journal (also by a new process), stuck transactions
 * replaced at the same nonce, and the fee cap. Real anvil; automine off where pending matters.
 */
import { appendFileSync, mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createTestClient, type Hex, http, keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { devAccounts } from "../src/evm/devnet/accounts.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { handleSettle } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";

const tempJournal = () =>
  path.join(mkdtempSync(path.join(os.tmpdir(), "facilitator-journal-")), "journal.jsonl");

const payerOf = (devnet: Devnet, i: number) => {
  const payer = devnet.payers[i % devnet.payers.length];
  if (!payer) throw new Error("no payers");
  return payer;
};

describe("automine", () => {
  let devnet: Devnet;
  beforeAll(async () => {
    devnet = await startDevnet();
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  test("10 concurrent settles of one authorization: one broadcast, one success", async () => {
    const facilitator = facilitatorOn(devnet);
    const request = await signSampleRequest(devnet, { payer: payerOf(devnet, 0) });
    const sentBefore = await chainOf(devnet).getTransactionCount({
      address: devnet.facilitator.address,
    });
    const payeeBefore = await tokenBalance(devnet, devnet.payee.address);

    const replies = await Promise.all(
      Array.from({ length: 10 }, () => handleSettle(facilitator, request)),
    );
    const codes = replies.map((r) => (r.body.success ? "success" : r.body.error));
    expect(codes.filter((c) => c === "success")).toHaveLength(1);
    for (const code of codes.filter((c) => c !== "success")) {
      expect(["settlement_in_progress", "nonce_already_used"]).toContain(code);
    }
    expect(replies.find((r) => r.body.error === "settlement_in_progress")?.status ?? 409).toBe(409);
    expect(await chainOf(devnet).getTransactionCount({ address: devnet.facilitator.address })).toBe(
      sentBefore + 1,
    );
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + 10_000n);

    // Later, the same payload is refused from the journal without touching the chain.
    const later = await handleSettle(facilitator, request);
    expect(later.body).toMatchObject({ success: false, error: "nonce_already_used" });
    expect(later.body.message).toContain(
      replies.find((r) => r.body.success)?.body.transactionHash as string,
    );
  });

  test("200 distinct settles at once from one key: every one lands, once, with consecutive nonces", async () => {
    const facilitator = facilitatorOn(devnet);
    const requests = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        signSampleRequest(devnet, { payer: payerOf(devnet, i) }),
      ),
    );
    const rpc = chainOf(devnet);
    const sentBefore = await rpc.getTransactionCount({ address: devnet.facilitator.address });
    const payeeBefore = await tokenBalance(devnet, devnet.payee.address);

    const replies = await Promise.all(requests.map((r) => handleSettle(facilitator, r)));
    const failures = replies.filter((r) => !r.body.success).map((r) => r.body);
    expect(failures).toEqual([]);
    const hashes = new Set(replies.map((r) => r.body.transactionHash as Hex));
    expect(hashes.size).toBe(200);
    expect(await rpc.getTransactionCount({ address: devnet.facilitator.address })).toBe(
      sentBefore + 200,
    );
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(payeeBefore + 200n * 10_000n);
    const nonces = await Promise.all(
      [...hashes].map(async (hash) => (await rpc.getTransaction({ hash })).nonce),
    );
    expect(nonces.sort((a, b) => a - b)).toEqual(
      Array.from({ length: 200 }, (_, i) => sentBefore + i),
    );
  }, 60_000);

  test("a pool of 4 keys shares the work and /supported lists every signer", async () => {
    const pool = [0, 6, 7, 8].map((i) =>
      privateKeyToAccount((devAccounts[i] as { privateKey: Hex }).privateKey),
    );
    const facilitator = facilitatorOn(devnet, { signer: undefined, signers: pool });
    expect((await facilitator.supported()).signers).toEqual({
      "eip155:*": pool.map((a) => a.address),
    });
    const rpc = chainOf(devnet);
    const before = await Promise.all(
      pool.map((a) => rpc.getTransactionCount({ address: a.address })),
    );
    const requests = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        signSampleRequest(devnet, { payer: payerOf(devnet, i) }),
      ),
    );
    const replies = await Promise.all(requests.map((r) => handleSettle(facilitator, r)));
    expect(replies.every((r) => r.body.success)).toBe(true);
    const after = await Promise.all(
      pool.map((a) => rpc.getTransactionCount({ address: a.address })),
    );
    expect(after.map((n, i) => n - (before[i] as number))).toEqual([10, 10, 10, 10]);
  }, 60_000);

  test("the fee cap: above it nothing is sent and the answer is fee_cap_exceeded (503)", async () => {
    const facilitator = facilitatorOn(devnet, { maxFeeWei: 1000n });
    const request = await signSampleRequest(devnet, { payer: payerOf(devnet, 1) });
    const sentBefore = await chainOf(devnet).getTransactionCount({
      address: devnet.facilitator.address,
    });
    const reply = await handleSettle(facilitator, request);
    expect(reply.status).toBe(503);
    expect(reply.body).toMatchObject({ success: false, error: "fee_cap_exceeded" });
    expect(reply.body.message).toMatch(/over the fee cap of 0.000000000000001 of the native token/);
    expect(await chainOf(devnet).getTransactionCount({ address: devnet.facilitator.address })).toBe(
      sentBefore,
    );
    // A cap for this chain wins over the global one.
    const perChain = facilitatorOn(devnet, {
      maxFeeWei: 1000n,
      maxFeeWeiByChain: { [devnet.chainId]: 10n ** 18n },
    });
    expect((await handleSettle(perChain, request)).body.success).toBe(true);
  });
});

describe("manual mining", () => {
  let devnet: Devnet;
  const mine = () =>
    createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });
  beforeAll(async () => {
    devnet = await startDevnet({ mining: "manual" });
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  test("a timed-out settle is reconciled from the journal by a new process, never sent again", async () => {
    const journalPath = tempJournal();
    const request = await signSampleRequest(devnet, { payer: payerOf(devnet, 0) });
    const rpc = chainOf(devnet);
    const sentBefore = await rpc.getTransactionCount({ address: devnet.facilitator.address });

    const first = facilitatorOn(devnet, {
      journal: new Journal(journalPath),
      confirmTimeoutMs: 500,
    });
    const pending = await handleSettle(first, request);
    expect(pending).toMatchObject({
      status: 500,
      body: { success: false, error: "settlement_pending" },
    });
    const hash = pending.body.transactionHash as Hex;
    expect(readFileSync(journalPath, "utf8")).toContain(hash);

    // Still not mined: the retry follows the same transaction and sends nothing new.
    const again = await handleSettle(first, request);
    expect(again.body).toMatchObject({ error: "settlement_pending", transactionHash: hash });
    expect(
      await rpc.getTransactionCount({ address: devnet.facilitator.address, blockTag: "pending" }),
    ).toBe(sentBefore + 1);

    // "Restart": a new facilitator on the same journal file.
    await mine();
    const second = facilitatorOn(devnet, {
      journal: new Journal(journalPath),
      confirmTimeoutMs: 2_000,
    });
    const settled = await handleSettle(second, request);
    expect(settled).toMatchObject({ status: 200, body: { success: true, transactionHash: hash } });
    expect(await rpc.getTransactionCount({ address: devnet.facilitator.address })).toBe(
      sentBefore + 1,
    );

    const third = await handleSettle(second, request);
    expect(third).toMatchObject({ status: 400, body: { error: "nonce_already_used" } });
  });

  test("a crash between journal and broadcast: the same signed bytes are sent on the retry", async () => {
    const journalPath = tempJournal();
    const request = await signSampleRequest(devnet, { payer: payerOf(devnet, 1) });
    const rpc = chainOf(devnet);
    const account = privateKeyToAccount(devnet.facilitator.privateKey);
    const nonce = await rpc.getTransactionCount({ address: account.address, blockTag: "pending" });

    // What a process that died right after the fsync leaves behind: a journaled, unsent transaction.
    const probe = facilitatorOn(devnet, {
      journal: new Journal(journalPath),
      confirmTimeoutMs: 200,
    });
    const simulated = await handleSettle(probe, { ...request, waitUntil: "simulated" });
    expect(simulated.body.success).toBe(true);
    const { payload } = request as {
      payload: { payload: { authorization: Record<string, string> } };
    };
    const auth = payload.payload.authorization;
    const key =
      `eip3009:${devnet.chainId}:${devnet.token.address}:${auth.from}:${auth.nonce}`.toLowerCase();
    const { encodeFunctionData, parseSignature } = await import("viem");
    const { eip3009Abi } = await import("../src/evm/exact/eip3009-encoding.js");
    const signature = (payload.payload as unknown as { signature: Hex }).signature;
    const { r, s, v } = parseSignature(signature);
    const data = encodeFunctionData({
      abi: eip3009Abi,
      functionName: "transferWithAuthorization",
      args: [
        auth.from as Hex,
        auth.to as Hex,
        BigInt(auth.value as string),
        BigInt(auth.validAfter as string),
        BigInt(auth.validBefore as string),
        auth.nonce as Hex,
        Number(v),
        r,
        s,
      ],
    });
    const raw = await account.signTransaction({
      chainId: devnet.chainId,
      type: "eip1559",
      to: devnet.token.address,
      data,
      gas: 200_000n,
      nonce,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 10n ** 9n,
    });
    const hash = keccak256(raw);
    const crashed = new Journal(journalPath);
    await crashed.recordSend(
      {
        key,
        network: `eip155:${devnet.chainId}`,
        signer: account.address,
        txNonce: nonce,
        expect: {
          token: devnet.token.address,
          from: auth.from as Hex,
          to: auth.to as Hex,
          value: auth.value as string,
        },
      },
      hash,
      raw,
    );
    crashed.close();

    const restarted = facilitatorOn(devnet, {
      journal: new Journal(journalPath),
      confirmTimeoutMs: 3_000,
    });
    const settling = handleSettle(restarted, request);
    for (let i = 0; i < 50; i++) {
      const found = await rpc.getTransaction({ hash }).then(
        () => true,
        () => false,
      );
      if (found) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await mine();
    expect((await settling).body).toMatchObject({ success: true, transactionHash: hash });
    expect(await rpc.getTransactionCount({ address: account.address })).toBe(nonce + 1);
  });

  test("a stuck transaction is replaced at the same nonce with a higher fee; the journal keeps both", async () => {
    const journalPath = tempJournal();
    const facilitator = facilitatorOn(devnet, {
      journal: new Journal(journalPath),
      confirmTimeoutMs: 1_500,
      replaceAfterMs: 300,
    });
    const request = await signSampleRequest(devnet, { payer: payerOf(devnet, 2) });
    const rpc = chainOf(devnet);
    const sentBefore = await rpc.getTransactionCount({ address: devnet.facilitator.address });
    const pending = await handleSettle(facilitator, request);
    expect(pending.body).toMatchObject({ error: "settlement_pending" });

    const lines = readFileSync(journalPath, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const hashes = lines
      .filter((l) => l.t === "send" || l.t === "replace")
      .map((l) => l.hash as Hex);
    expect(hashes.length).toBeGreaterThanOrEqual(2);
    expect(pending.body.transactionHash).toBe(hashes.at(-1));
    const [original, replacement] = await Promise.all(
      [hashes[0], hashes.at(-1)].map((hash) =>
        rpc.getTransaction({ hash: hash as Hex }).catch(() => undefined),
      ),
    );
    expect(original === undefined || original.nonce === replacement?.nonce).toBe(true);
    expect(replacement?.maxFeePerGas).toBeGreaterThan(0n);

    await mine();
    const settled = await handleSettle(facilitator, request);
    expect(settled.body).toMatchObject({ success: true });
    expect(hashes).toContain(settled.body.transactionHash);
    expect(await rpc.getTransactionCount({ address: devnet.facilitator.address })).toBe(
      sentBefore + 1,
    );
  });
});

test("the journal keeps every unsettled entry and only the newest settled ones in memory", async () => {
  const journal = new Journal();
  const limit = Journal.SETTLED_IN_MEMORY;
  const transfer = {
    token: devAccounts[0]?.address as Hex,
    from: devAccounts[1]?.address as Hex,
    to: devAccounts[2]?.address as Hex,
    value: "1",
  };
  const entry = (i: number) => ({
    key: `k${i}`,
    network: "eip155:1",
    signer: transfer.from,
    txNonce: i,
    expect: transfer,
  });
  await journal.recordSend(entry(0), `0x${"00".repeat(32)}`, "0x00");
  for (let i = 1; i <= limit + 10; i++) {
    await journal.recordSend(entry(i), `0x${i.toString(16).padStart(64, "0")}`, "0x00");
    await journal.recordState(`k${i}`, "answered");
  }
  expect(journal.get("k0")?.state).toBe("broadcast");
  expect(journal.get("k1")).toBeUndefined();
  expect(journal.get(`k${limit + 10}`)?.state).toBe("answered");
});

test("a long journal is compacted at start-up, keeping every unsettled entry and its bytes", async () => {
  const file = tempJournal();
  const journal = new Journal(file);
  const signer = devAccounts[1]?.address as Hex;
  const transfer = {
    token: devAccounts[0]?.address as Hex,
    from: signer,
    to: devAccounts[2]?.address as Hex,
    value: "1",
  };
  const hash = (i: number) => `0x${i.toString(16).padStart(64, "0")}` as Hex;
  for (let i = 0; i < 300; i++) {
    await journal.recordSend(
      { key: `k${i}`, network: "eip155:1", signer, txNonce: i, expect: transfer },
      hash(i),
      "0xab",
    );
    if (i !== 7) await journal.recordState(`k${i}`, "answered");
  }
  await journal.recordReplace("k7", hash(1000), "0xcd");
  journal.close();
  const linesBefore = readFileSync(file, "utf8").trim().split("\n").length;
  expect(linesBefore).toBe(300 + 299 + 1);

  // Small limits stand in for a real deployment's 100,000 lines and 20,000 settled entries.
  const reopened = new Journal(file, { compactAfterLines: 100, settledInMemory: 50 });
  expect(reopened.get("k7")).toMatchObject({
    state: "broadcast",
    hashes: [hash(7), hash(1000)],
    raws: ["0xab", "0xcd"],
  });
  expect(reopened.get("k299")).toMatchObject({ state: "answered" });
  expect(reopened.get("k8")).toBeUndefined(); // old settled history: the token refuses a replay
  reopened.close();
  const after = new Journal(file);
  expect(after.get("k7")).toMatchObject({
    state: "broadcast",
    hashes: [hash(7), hash(1000)],
    raws: ["0xab", "0xcd"],
  });
  expect(after.get("k299")?.state).toBe("answered");
  expect(readFileSync(file, "utf8").trim().split("\n").length).toBeLessThan(linesBefore);
});

test("records made at once are all on disk, in order, when each one's promise resolves", async () => {
  const file = tempJournal();
  const journal = new Journal(file);
  const signer = devAccounts[1]?.address as Hex;
  const transfer = { token: signer, from: signer, to: signer, value: "1" };
  const hash = (i: number) => `0x${i.toString(16).padStart(64, "0")}` as Hex;
  const onDisk = (key: string) => readFileSync(file, "utf8").includes(`"key":"${key}"`);
  await Promise.all(
    Array.from({ length: 50 }, async (_, i) => {
      await journal.recordSend(
        { key: `k${i}`, network: "eip155:1", signer, txNonce: i, expect: transfer },
        hash(i),
        "0xab",
      );
      // Resolved means written: the caller may broadcast now.
      expect(onDisk(`k${i}`)).toBe(true);
    }),
  );
  journal.close();
  const keys = readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as { key: string }).key);
  expect(keys).toEqual(Array.from({ length: 50 }, (_, i) => `k${i}`));
});

test("a line torn by a crash does not swallow the next record", async () => {
  const file = tempJournal();
  const signer = devAccounts[1]?.address as Hex;
  const transfer = { token: signer, from: signer, to: signer, value: "1" };
  const first = new Journal(file);
  await first.recordSend(
    { key: "whole", network: "eip155:1", signer, txNonce: 0, expect: transfer },
    `0x${"11".repeat(32)}`,
    "0xab",
  );
  first.close();
  appendFileSync(file, '{"t":"send","key":"torn","chainId":1,"sig'); // the crash
  const second = new Journal(file);
  await second.recordSend(
    { key: "after", network: "eip155:1", signer, txNonce: 1, expect: transfer },
    `0x${"22".repeat(32)}`,
    "0xcd",
  );
  second.close();
  const third = new Journal(file);
  expect(third.get("whole")?.hashes).toEqual([`0x${"11".repeat(32)}`]);
  expect(third.get("torn")).toBeUndefined();
  expect(third.get("after")).toMatchObject({ txNonce: 1, raws: ["0xcd"], state: "broadcast" });
  third.close();
});

describe("a dry run sends nothing, whatever the store holds", () => {
  let devnet: Devnet;
  beforeAll(async () => {
    // Nothing is mined unless asked: the transaction stays in the pool until it is dropped.
    devnet = await startDevnet({ mining: "manual" });
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  test("simulated on an answered payment whose transaction left the pool: nothing is sent again", async () => {
    const facilitator = facilitatorOn(devnet, { confirmTimeoutMs: 2_000 });
    const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    const rpc = chainOf(devnet);
    const request = await signSampleRequest(devnet, { payer: payerOf(devnet, 2) });
    const pendingNonce = () =>
      rpc.getTransactionCount({ address: devnet.facilitator.address, blockTag: "pending" });
    const submitted = await handleSettle(facilitator, { ...request, waitUntil: "submitted" });
    expect(submitted.body).toMatchObject({ success: true });
    const hash = submitted.body.transactionHash as Hex;
    // The pool loses it (an eviction, a node restart): the payment was answered, nothing holds it.
    await anvil.dropTransaction({ hash });
    const nonce = await pendingNonce();
    expect((await anvil.getTxpoolStatus()).pending).toBe(0);

    const dry = await handleSettle(facilitator, { ...request, waitUntil: "simulated" });
    expect(dry.body.success).toBe(false);
    expect(await pendingNonce()).toBe(nonce);
    expect(await anvil.getTxpoolStatus()).toEqual({ pending: 0, queued: 0 });
  });
});
