/**
 * Settle on a real anvil: each waitUntil level, money moving exactly once, nothing sent for an
 * invalid payment, and a broadcast that is not confirmed in time answered with its hash.
 */
import {
  type Address,
  createPublicClient,
  createTestClient,
  type Hex,
  http,
  isAddressEqual,
  parseEventLogs,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import { type Devnet, deployErc1271Wallet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { randomNonce, signAuthorization, wireAuthorization } from "./helpers/sign.js";
import { clientPayload, requirementsV1, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let facilitator: Facilitator;

const chain = () => chainOf(devnet);

const balanceOf = (who: Address) => tokenBalance(devnet, who);

const sentBy = (who: Address) => chain().getTransactionCount({ address: who });

const payer = (i: number) => {
  const account = devnet?.payers[i];
  if (!account) throw new Error(`no payer ${i}`);
  return account;
};

async function payment(
  version: 1 | 2 = 2,
  who = 0,
  overrides: Parameters<typeof requirementsV2>[1] = {},
) {
  const requirements =
    version === 1 ? requirementsV1(devnet, overrides) : requirementsV2(devnet, overrides);
  return { payload: await clientPayload(payer(who), requirements), requirements };
}

beforeAll(async () => {
  devnet = await startDevnet({ chainId: 84532 });
  facilitator = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
  });
});

afterAll(async () => {
  await devnet?.stop();
});

describe("waitUntil", () => {
  test("confirmed: the payee receives the amount, once, in a successful transaction", async () => {
    const request = await payment();
    const [payeeBefore, payerBefore] = await Promise.all([
      balanceOf(devnet.payee.address),
      balanceOf(payer(0).address),
    ]);
    const reply = await handleSettle(facilitator, { ...request, waitUntil: "confirmed" });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      success: true,
      transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });

    const receipt = await chain().getTransactionReceipt({
      hash: reply.body.transactionHash as Hex,
    });
    expect(receipt.status).toBe("success");
    expect(receipt.from.toLowerCase()).toBe(devnet.facilitator.address.toLowerCase());
    const transfers = parseEventLogs({
      abi: testUsdcAbi,
      logs: receipt.logs,
      eventName: "Transfer",
    });
    expect(transfers.map((t) => t.args)).toEqual([
      { from: payer(0).address, to: devnet.payee.address, value: 10_000n },
    ]);
    expect(await balanceOf(devnet.payee.address)).toBe(payeeBefore + 10_000n);
    expect(await balanceOf(payer(0).address)).toBe(payerBefore - 10_000n);
  });

  test("waitUntil defaults to confirmed", async () => {
    const request = await payment();
    const reply = await handleSettle(facilitator, request);
    expect(reply.body.success).toBe(true);
    const receipt = await chain().getTransactionReceipt({
      hash: reply.body.transactionHash as Hex,
    });
    expect(receipt.status).toBe("success");
  });

  test("submitted: answers with the hash once the node accepted it", async () => {
    const request = await payment();
    const reply = await handleSettle(facilitator, { ...request, waitUntil: "submitted" });
    expect(reply.body).toMatchObject({ success: true });
    const receipt = await chain().waitForTransactionReceipt({
      hash: reply.body.transactionHash as Hex,
    });
    expect(receipt.status).toBe("success");
  });

  test("simulated: signs and dry-runs, broadcasts nothing, moves no money", async () => {
    const request = await payment();
    const sent = await sentBy(devnet.facilitator.address);
    const payeeBefore = await balanceOf(devnet.payee.address);
    const reply = await handleSettle(facilitator, { ...request, waitUntil: "simulated" });
    expect(reply.body).toMatchObject({
      success: true,
      transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    await expect(
      chain().getTransaction({ hash: reply.body.transactionHash as Hex }),
    ).rejects.toThrow();
    expect(await sentBy(devnet.facilitator.address)).toBe(sent);
    expect(await balanceOf(devnet.payee.address)).toBe(payeeBefore);
    // The authorization is still unused: a real settlement of it goes through.
    expect((await handleSettle(facilitator, request)).body.success).toBe(true);
  });
});

describe("exactly once", () => {
  test("a second settle of a settled payment is nonce_already_used and sends nothing", async () => {
    const request = await payment(2, 1);
    expect((await handleSettle(facilitator, request)).body.success).toBe(true);
    const payeeAfterFirst = await balanceOf(devnet.payee.address);
    const sent = await sentBy(devnet.facilitator.address);

    const again = await handleSettle(facilitator, request);
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ success: false, error: "nonce_already_used" });
    expect(again.body.transactionHash).toBeUndefined();
    expect(await sentBy(devnet.facilitator.address)).toBe(sent);
    expect(await balanceOf(devnet.payee.address)).toBe(payeeAfterFirst);
  });

  test("an invalid payment is answered with its verify code and nothing is sent", async () => {
    const request = await payment();
    const sent = await sentBy(devnet.facilitator.address);
    const reply = await handleSettle(facilitator, {
      ...request,
      requirements: { ...request.requirements, amount: "1" },
    });
    expect(reply).toMatchObject({
      status: 400,
      body: { success: false, error: "amount_mismatch" },
    });
    const poor = await payment(2, 2, { amount: (5_000_000n * 10n ** 6n).toString() });
    const broke = await handleSettle(facilitator, poor);
    expect(broke).toMatchObject({
      status: 400,
      body: { success: false, error: "insufficient_funds" },
    });
    expect(await sentBy(devnet.facilitator.address)).toBe(sent);
  });
});

describe("dialects and payers", () => {
  test("x402 dialect, v2: success carries payer, transaction and network", async () => {
    const { payload, requirements } = await payment();
    const reply = await handleSettle(facilitator, {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      success: true,
      payer: payer(0).address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: devnet.network,
    });
  });

  test("x402 dialect, v1: a base-sepolia payment settles and echoes the v1 network", async () => {
    const { payload, requirements } = await payment(1);
    const reply = await handleSettle(facilitator, {
      x402Version: 1,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    expect(reply.body).toMatchObject({
      success: true,
      network: "base-sepolia",
      payer: payer(0).address,
    });
  });

  test("x402 dialect: a replay is success:false with the reference's reason and an empty transaction", async () => {
    const { payload, requirements } = await payment();
    const body = { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
    expect((await handleSettle(facilitator, body)).body.success).toBe(true);
    const again = await handleSettle(facilitator, body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
      transaction: "",
      network: devnet.network,
      payer: payer(0).address,
    });
  });

  test("an EIP-1271 contract wallet pays", async () => {
    const owner = payer(3);
    const wallet = await deployErc1271Wallet(devnet, owner.address);
    const fields = {
      from: wallet,
      to: devnet.payee.address,
      value: 10_000n,
      validAfter: 0n,
      validBefore: BigInt(Math.floor(Date.now() / 1000) + 300),
      nonce: randomNonce(),
    };
    const signature = await signAuthorization(devnet, owner.privateKey, fields);
    const requirements = requirementsV2(devnet);
    const request = {
      payload: {
        x402Version: 2,
        accepted: requirements,
        payload: { authorization: wireAuthorization(fields), signature },
      },
      requirements,
    };
    const before = await balanceOf(wallet);
    expect((await handleSettle(facilitator, request)).body.success).toBe(true);
    expect(await balanceOf(wallet)).toBe(before - 10_000n);
  });
});

describe("infrastructure", () => {
  test("without a settlement key: settlement_failed, 500, and verify still works", async () => {
    const keyless = new Facilitator({ rpcUrls: [devnet.rpcUrl], useDefaultRpcs: false });
    const request = await payment();
    expect((await handleVerify(keyless, request)).body.success).toBe(true);
    const reply = await handleSettle(keyless, request);
    expect(reply.status).toBe(500);
    expect(reply.body).toMatchObject({ success: false, error: "settlement_failed" });
    expect(reply.body.message).toMatch(/no settlement key/);
  });

  test("an unreachable RPC is chain_unavailable: 503 for verify, 500 for settle", async () => {
    const request = await payment();
    const offline = new Facilitator({
      rpcUrls: ["http://127.0.0.1:1"],
      useDefaultRpcs: false,
      signer: privateKeyToAccount(devnet.facilitator.privateKey),
    });
    const verify = await handleVerify(offline, request);
    const settle = await handleSettle(offline, request);
    // The service is fine, the chain is not: 503 for verify; for settle, the settlement failed: 500.
    expect(verify.status).toBe(503);
    expect(settle.status).toBe(500);
    for (const reply of [verify, settle]) {
      expect(reply.body).toMatchObject({ success: false, error: "chain_unavailable" });
      expect(reply.body.message).toContain("http://127.0.0.1:1");
    }
  });
});

// The proxy stands in for nodes this machine cannot run: one without eth_sendRawTransactionSync,
// one whose answer is an error although it took the transaction. Behind it is the real anvil.
describe("broadcasting (eth_sendRawTransactionSync, and nodes without it)", () => {
  let proxy: RpcProxy;
  beforeAll(async () => {
    proxy = await startRpcProxy(devnet.rpcUrl);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  /** A facilitator of its own (so what it learned about the node is its own), through the proxy. */
  const throughProxy = () =>
    new Facilitator({
      rpcUrls: [proxy.url],
      useDefaultRpcs: false,
      signer: privateKeyToAccount(devnet.facilitator.privateKey),
    });

  const calls = (method: string) => proxy.counts.get(method) ?? 0;

  /** Settles `count` fresh payments one after another; checks each landed once, in its own tx. */
  async function settleFresh(facilitator: Facilitator, count: number, waitUntil = "confirmed") {
    const payeeBefore = await balanceOf(devnet.payee.address);
    const sentBefore = await sentBy(devnet.facilitator.address);
    for (let i = 0; i < count; i++) {
      const reply = await handleSettle(facilitator, { ...(await payment(2, 2)), waitUntil });
      expect(reply.body).toMatchObject({ success: true });
      const receipt = await chain().waitForTransactionReceipt({
        hash: reply.body.transactionHash as Hex,
      });
      expect(receipt.status).toBe("success");
    }
    expect(await balanceOf(devnet.payee.address)).toBe(payeeBefore + BigInt(count) * 10_000n);
    expect(await sentBy(devnet.facilitator.address)).toBe(sentBefore + count);
  }

  test("a node with it: the receipt comes with the broadcast, nothing is polled", async () => {
    proxy.counts.clear();
    proxy.intercept = () => undefined;
    await settleFresh(throughProxy(), 2);
    expect(calls("eth_sendRawTransactionSync")).toBe(2);
    expect(calls("eth_sendRawTransaction")).toBe(0);
    expect(calls("eth_getTransactionReceipt")).toBe(0);
  });

  test("waitUntil submitted uses the plain method", async () => {
    proxy.counts.clear();
    proxy.intercept = () => undefined;
    await settleFresh(throughProxy(), 1, "submitted");
    expect(calls("eth_sendRawTransactionSync")).toBe(0);
    expect(calls("eth_sendRawTransaction")).toBe(1);
  });

  test("a node without it: the plain method and receipt polling, and it is asked only once", async () => {
    proxy.counts.clear();
    proxy.intercept = (method) =>
      method === "eth_sendRawTransactionSync"
        ? {
            refuse: {
              code: -32601,
              message: "the method eth_sendRawTransactionSync does not exist",
            },
          }
        : undefined;
    await settleFresh(throughProxy(), 3);
    expect(calls("eth_sendRawTransactionSync")).toBe(1);
    expect(calls("eth_sendRawTransaction")).toBe(3);
    expect(calls("eth_getTransactionReceipt")).toBeGreaterThanOrEqual(3);
  });

  test("an error answer although the node took it: the same bytes again, one transfer", async () => {
    proxy.counts.clear();
    let failures = 1;
    proxy.intercept = (method) =>
      method === "eth_sendRawTransactionSync" && failures-- > 0
        ? { forwardThenFail: { code: -32000, message: "upstream hiccup" } }
        : undefined;
    // settleFresh checks one transaction and one transfer per payment.
    await settleFresh(throughProxy(), 2);
    // The plain re-send found the transaction already taken; the node keeps being asked the
    // synchronous way, since it did take the transaction.
    expect(calls("eth_sendRawTransactionSync")).toBe(2);
    expect(calls("eth_sendRawTransaction")).toBe(1);
  });
});

test("a transaction a local node left parked is replaced a second after it was sent, and lands once", async () => {
  // The node stands in for anvil's race (a transaction filed as waiting for a predecessor that
  // was being mined, never looked at again): it is made to happen on purpose with setNonce. The
  // devnet's anvil also mines an interval block every second (--mixed-mining) and then says it
  // does not automine: the block that passes the transaction over comes while the synchronous send
  // waits, and must count (a head read after that wait missed it: over two seconds).
  const test = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
  const own = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
  });
  const address = devnet.facilitator.address;
  expect((await handleSettle(own, await payment(2, 3))).body.success).toBe(true);
  const next = await sentBy(address);
  // The chain steps back one nonce: the lane's next transaction waits for a predecessor...
  await test.setNonce({ address, nonce: next - 1 });
  const payeeBefore = await balanceOf(devnet.payee.address);
  const request = await payment(2, 3);
  const started = Date.now();
  const settling = handleSettle(own, request);
  // Ours at that nonce, not anything an earlier test left in the pool.
  const queued = async () => {
    const content = (await chain().request({ method: "txpool_content" } as never)) as {
      queued: Record<string, Record<string, unknown>>;
    };
    const byNonce = Object.entries(content.queued).find(([from]) =>
      isAddressEqual(from as Address, address),
    );
    return byNonce?.[1][String(next)] !== undefined;
  };
  for (let i = 0; i < 100 && !(await queued()); i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(await queued()).toBe(true);
  // ...and then the chain reaches its nonce without the pool noticing: parked.
  await test.setNonce({ address, nonce: next });
  const reply = await settling;
  expect(reply.body).toMatchObject({ success: true });
  // One second of waiting for the synchronous answer, then the check, the replacement, its receipt
  // (the default replace-after is 15 s; waiting for the next interval block took over two).
  expect(Date.now() - started).toBeLessThan(1_900);
  const receipt = await chain().getTransactionReceipt({ hash: reply.body.transactionHash as Hex });
  expect(receipt.status).toBe("success");
  expect(await balanceOf(devnet.payee.address)).toBe(payeeBefore + 10_000n);
  expect(await sentBy(address)).toBe(next + 1);
});

describe("a transaction that is not mined in time", () => {
  let stalled: Devnet;
  beforeAll(async () => {
    stalled = await startDevnet({ mining: "manual" });
  });
  afterAll(async () => {
    await stalled?.stop();
  });

  test("answers settlement_pending with the hash; once mined, the payment is there", async () => {
    const slow = new Facilitator({
      rpcUrls: [stalled.rpcUrl],
      useDefaultRpcs: false,
      signer: privateKeyToAccount(stalled.facilitator.privateKey),
      confirmTimeoutMs: 1_000,
      receiptPollMs: 100,
    });
    const who = stalled.payers[0];
    if (!who) throw new Error("no payer");
    const requirements = requirementsV2(stalled);
    const request = { payload: await clientPayload(who, requirements), requirements };

    const reply = await handleSettle(slow, request);
    expect(reply.status).toBe(500);
    expect(reply.body).toMatchObject({
      success: false,
      error: "settlement_pending",
      transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    const hash = reply.body.transactionHash as Hex;
    const rpc = createPublicClient({ transport: http(stalled.rpcUrl) });
    expect((await rpc.getTransaction({ hash })).hash).toBe(hash);

    await createTestClient({ mode: "anvil", transport: http(stalled.rpcUrl) }).mine({ blocks: 1 });
    const receipt = await rpc.getTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    const balance = await rpc.readContract({
      address: stalled.token.address,
      abi: testUsdcAbi,
      functionName: "balanceOf",
      args: [stalled.payee.address],
    });
    expect(balance).toBe(10_000n);
  });
});
