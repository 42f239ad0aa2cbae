/**
 * Nothing we pay for is worth nothing (issue 37, item 2). Payments of 0 from keys that never held
 * a token, signed by the official x402 clients, are refused at verify and settle before any chain
 * call on every EVM path (exact by EIP-3009, Permit2 and x402x permit; upto; batch-settlement
 * deposits and refunds): the facilitator's nonce does not move and its RPC sees no call. An
 * operator's minimum per asset refuses below it and settles at it; a payer or payee past its rate
 * of settlements waits with 429 and Retry-After, in process and through `serve --rate-per-payer`.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { x402Client } from "@x402/core/client";
import { UptoEvmScheme as UptoEvmClient } from "@x402/evm/upto/client";
import type { Address } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signPermitRequest } from "../src/evm/devnet/sign-permit.js";
import type { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { officialChannel } from "./helpers/batch.js";
import { chainOf } from "./helpers/chain.js";
import { facilitatorOn, handlePost, postJson } from "./helpers/facilitator.js";
import { officialPermit2Payload, permit2Requirements } from "./helpers/permit2.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { startServe } from "./helpers/serve.js";
import { clientPayload, requirementsV1, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let proxy: RpcProxy;

beforeAll(async () => {
  devnet = await startDevnet({ chainId: 84532 });
  proxy = await startRpcProxy(devnet.rpcUrl);
});
afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
});

/** A key that never held anything. */
const fresh = (): DevAccount => {
  const privateKey = generatePrivateKey();
  return { address: privateKeyToAccount(privateKey).address, privateKey } as DevAccount;
};

/** Transactions the facilitator's key has sent, pending ones included. */
const sent = () =>
  chainOf(devnet).getTransactionCount({
    address: devnet.facilitator.address,
    blockTag: "pending",
  });

/** Calls the RPC proxy passed on to the chain since it was last cleared. */
const chainCalls = () => [...proxy.counts.values()].reduce((a, b) => a + b, 0);

/** A facilitator reaching the chain through the counting proxy, its chain id already learned. */
async function throughProxy(options: Parameters<typeof facilitatorOn>[1] = {}) {
  const facilitator = facilitatorOn(devnet, { rpcUrls: [proxy.url], ...options });
  await facilitator.supported();
  return facilitator;
}

const x402 = (paymentPayload: unknown, paymentRequirements: unknown) => ({
  x402Version: 2,
  paymentPayload,
  paymentRequirements,
});

async function verifyAndSettle(facilitator: Facilitator, body: unknown) {
  const [verified, settled] = await Promise.all([
    handlePost(facilitator, "/verify", body),
    handlePost(facilitator, "/settle", body),
  ]);
  return { verified: verified.body, settled: settled.body };
}

describe("payments of 0", () => {
  test("100 from fresh keys to fresh payees, official client: refused, 0 transactions, no chain call", async () => {
    const facilitator = await throughProxy();
    const payments = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const overrides = { amount: "0", payTo: fresh().address };
        // Five of them in x402 v1, where the amount is maxAmountRequired.
        const requirements =
          i < 5 ? requirementsV1(devnet, overrides) : requirementsV2(devnet, overrides);
        return x402(await clientPayload(fresh(), requirements), requirements);
      }),
    );
    const before = await sent();
    proxy.counts.clear();
    const answers = await Promise.all(payments.map((body) => verifyAndSettle(facilitator, body)));

    for (const [i, { verified, settled }] of answers.entries()) {
      expect(verified).toMatchObject({ isValid: false, invalidReason: "amount_too_small" });
      expect(settled).toMatchObject({
        success: false,
        errorReason: "amount_too_small",
        transaction: "",
      });
      expect(String(settled.errorMessage)).toContain(
        i < 5 ? "paymentRequirements.maxAmountRequired is 0" : "paymentRequirements.amount is 0",
      );
    }
    expect(chainCalls()).toBe(0);
    expect(await sent()).toBe(before);
  });

  test("every EVM path: Permit2, x402x permit, upto, batch deposit and refund: refused before any chain call; an upto settle of 0 sends nothing", async () => {
    const facilitator = await throughProxy();
    const payer = fresh();
    const payTo = fresh().address;

    const permit2Reqs = permit2Requirements(devnet, devnet.permitToken, { amount: "0", payTo });
    const permit2 = x402(await officialPermit2Payload(devnet, payer, permit2Reqs), permit2Reqs);

    const permit = await signPermitRequest(devnet, payer, { value: 0n });
    const permitReqs = { ...permit.requirements, amount: "0", payTo };
    const permitBody = {
      payload: { ...permit.payload, accepted: permitReqs },
      requirements: permitReqs,
    };

    const uptoReqs = {
      scheme: "upto",
      network: devnet.network,
      amount: "0",
      asset: devnet.permitToken.address,
      payTo,
      maxTimeoutSeconds: 300,
      extra: {
        name: devnet.permitToken.name,
        version: devnet.permitToken.version,
        facilitatorAddress: devnet.facilitator.address,
      },
    };
    const uptoClient = x402Client.fromConfig({ schemes: [], spendControls: false });
    uptoClient.register(devnet.network, new UptoEvmClient(privateKeyToAccount(payer.privateKey)));
    const upto = x402(
      await uptoClient.createPaymentPayload({
        x402Version: 2,
        resource: { url: "http://localhost/metered" },
        accepts: [uptoReqs],
        // biome-ignore lint/suspicious/noExplicitAny: the client's types are version unions.
      } as any),
      uptoReqs,
    );

    const batchReqs = batchAccepted(payTo);
    const channel = officialChannel(devnet, payer, batchReqs as never);
    const voucher = await channel.voucher(0n);
    const channelVoucher = {
      channelId: channel.id,
      maxClaimableAmount: "0",
      signature: voucher.signature,
    };
    const deposit = x402(
      {
        x402Version: 2,
        accepted: batchReqs,
        payload: {
          type: "deposit",
          channelConfig: channel.config,
          voucher: channelVoucher,
          deposit: { amount: "0", authorization: { erc3009Authorization: erc3009Zero() } },
        },
      },
      batchReqs,
    );
    const managerReqs = { ...batchReqs, amount: "0", extra: {} };
    const refund = x402(
      {
        x402Version: 2,
        accepted: managerReqs,
        payload: {
          type: "refund",
          channelConfig: channel.config,
          voucher: channelVoucher,
          amount: "0",
          refundNonce: "0",
          claims: [],
          refundAuthorizerSignature: voucher.signature,
        },
      },
      managerReqs,
    );

    const before = await sent();
    proxy.counts.clear();
    for (const body of [permit2, deposit]) {
      const { verified, settled } = await verifyAndSettle(facilitator, body);
      expect(verified).toMatchObject({ isValid: false, invalidReason: "amount_too_small" });
      expect(settled).toMatchObject({ success: false, errorReason: "amount_too_small" });
    }
    const uptoVerified = await handlePost(facilitator, "/verify", upto);
    expect(uptoVerified.body).toMatchObject({
      isValid: false,
      invalidReason: "amount_too_small",
    });
    const permitSettled = await handlePost(facilitator, "/settle", permitBody);
    expect(permitSettled).toMatchObject({ status: 400, body: { error: "amount_too_small" } });
    const refunded = await handlePost(facilitator, "/settle", refund);
    expect(refunded.body).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_refund_amount_invalid",
    });
    expect(chainCalls()).toBe(0);
    // An upto settle of zero (nothing was used) is the reference's success with no transaction.
    const uptoSettled = await handlePost(facilitator, "/settle", upto);
    expect(uptoSettled.body).toMatchObject({ success: true, transaction: "", amount: "0" });
    expect(await sent()).toBe(before);
  });
});

/** batch-settlement requirements paying `payTo` with the devnet's test USDC. */
function batchAccepted(payTo: Address) {
  return {
    scheme: "batch-settlement",
    network: devnet.network,
    amount: "1000",
    asset: devnet.token.address,
    payTo,
    maxTimeoutSeconds: 300,
    extra: {
      receiverAuthorizer: devnet.facilitator.address,
      withdrawDelay: 900,
      name: devnet.token.name,
      version: devnet.token.version,
    },
  };
}

/** A well-formed ERC-3009 deposit authorization (never checked: the amount refuses it first). */
const erc3009Zero = () => ({
  validAfter: "0",
  validBefore: String(Math.floor(Date.now() / 1000) + 3600),
  salt: `0x${"11".repeat(32)}`,
  signature: `0x${"22".repeat(65)}`,
});

describe("--min-amount", () => {
  test("below the asset's minimum: refused before any chain call; at it: settled", async () => {
    // Written in mixed case: EVM assets compare in lower case.
    const asset = devnet.token.address;
    const facilitator = await throughProxy({
      minAmounts: [{ network: devnet.network, asset, units: 10_000n }],
    });
    const payer = devnet.payers[0] as DevAccount;
    const below = requirementsV2(devnet, { amount: "9999" });
    const at = requirementsV2(devnet, { amount: "10000" });
    const before = await sent();
    const belowBody = x402(await clientPayload(payer, below), below);
    proxy.counts.clear();
    const refused = await verifyAndSettle(facilitator, belowBody);
    expect(refused.verified).toMatchObject({ isValid: false, invalidReason: "amount_too_small" });
    expect(refused.settled).toMatchObject({ success: false, errorReason: "amount_too_small" });
    expect(String(refused.settled.errorMessage)).toContain("at least 10000 units");
    expect(chainCalls()).toBe(0);
    expect(await sent()).toBe(before);

    const settled = await handlePost(
      facilitator,
      "/settle",
      x402(await clientPayload(payer, at), at),
    );
    expect(settled.body).toMatchObject({ success: true });
    expect(await sent()).toBe(before + 1);
  });
});

describe("--rate-per-payer", () => {
  test("a payer past 3 settlements: 429 payer_throttled with Retry-After, nothing sent; its payee, at ten times the rate, is still paid by others", async () => {
    const facilitator = facilitatorOn(devnet, { ratePerPayer: 3 });
    const handler = createHandler(facilitator);
    const settle = async (payer: DevAccount, payTo: Address) => {
      const requirements = requirementsV2(devnet, { payTo });
      const payload = await clientPayload(payer, requirements);
      const answer = await handler({
        method: "POST",
        url: "/settle",
        headers: { "content-type": "application/json" },
        body: Buffer.from(JSON.stringify({ payload, requirements })),
      });
      return { ...answer, body: JSON.parse(answer.body) as Record<string, unknown> };
    };
    const [a, b] = devnet.payers as DevAccount[];
    if (!a || !b) throw new Error("the devnet has too few payers");
    const payee = fresh().address;
    for (let i = 0; i < 3; i++) {
      expect((await settle(a, payee)).body).toMatchObject({ success: true });
    }
    const before = await sent();
    const payerWaits = await settle(a, fresh().address);
    expect(payerWaits.status).toBe(429);
    expect(payerWaits.body).toMatchObject({ error: "payer_throttled" });
    expect(String(payerWaits.body.message)).toContain(`payer ${a.address.toLowerCase()}`);
    expect(Number(payerWaits.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(payerWaits.headers["retry-after"])).toBeLessThanOrEqual(20);
    expect(await sent()).toBe(before);
    // Another payer paying the same payee is served: a payee has 30 (test/throttle.test.ts counts
    // a payee's bucket out), so one busy buyer does not hold up the seller's other buyers.
    expect((await settle(b, payee)).body).toMatchObject({ success: true });
  });
});

describe("serve --rate-per-payer", () => {
  test("the flag reaches serve: the payer's second settlement waits, 429 with Retry-After, nothing sent", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-rate-per-payer-"));
    const keyFile = path.join(dir, "key");
    writeFileSync(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
    const serving = await startServe([
      "--rpc-url",
      devnet.rpcUrl,
      "--private-key-file",
      keyFile,
      "--journal",
      path.join(dir, "journal.jsonl"),
      "--rate-per-payer",
      "1",
    ]);
    try {
      const payer = devnet.payers[3] as DevAccount;
      const request = async () => {
        const requirements = requirementsV2(devnet, { payTo: fresh().address });
        return { payload: await clientPayload(payer, requirements), requirements };
      };
      expect((await postJson(serving, "/settle", await request())).body).toMatchObject({
        success: true,
      });
      const before = await sent();
      const waits = await postJson(serving, "/settle", await request());
      expect(waits).toMatchObject({ status: 429, body: { error: "payer_throttled" } });
      // One a minute: the next fits in a minute.
      expect(Number(waits.retryAfter)).toBeGreaterThan(50);
      expect(Number(waits.retryAfter)).toBeLessThanOrEqual(60);
      expect(await sent()).toBe(before);
    } finally {
      serving.child.kill("SIGTERM");
      await serving.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
