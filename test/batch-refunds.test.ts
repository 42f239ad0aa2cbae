/**
 * Our receiver authorizer signs a refund only when the channel's seller asks for it. The attack
 * this holds against: a payer deposits 10,000 on a channel naming our key (as /supported offers
 * it), the seller delivers 5 requests against vouchers up to 5,000, then the payer (or a
 * stranger, or another seller's API key) asks /settle for a refund of everything. Before: 200,
 * we signed `Refund(channelId, 0, 10000)` and sent it; the payer had its 10,000 back and the
 * seller's claim of 5,000 was refused. Now each is 403 `refund_not_authorized` and nothing is
 * signed or sent; the seller's own key gets its refund, with its last claim riding along.
 *
 * The official client makes the deposit and the vouchers; the HTTP service is ours in-process
 * (`createHandler`) on a real anvil devnet with the project's batch-settlement contract.
 */
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { type RunningServer, startServer } from "../src/http/server.js";
import {
  batchRequirements,
  managerRequirements,
  officialChannel,
  officialPayload,
  x402Request,
} from "./helpers/batch.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { postJson } from "./helpers/facilitator.js";

// biome-ignore lint/suspicious/noExplicitAny: wire objects are plain JSON here.
type Json = any;

const PRICE = 1_000n;
const SELLER_KEY = "seller-a-0123456789abcdef0123";
const OTHER_SELLER_KEY = "seller-b-0123456789abcdef0123";

let devnet: Devnet;
let server: RunningServer;
let payer: DevAccount;
let stranger: DevAccount;
let requirements: ReturnType<typeof batchRequirements>;

beforeAll(async () => {
  devnet = await startDevnet();
  const authorizer = devAccounts[7] as DevAccount;
  payer = devnet.payers[1] as DevAccount;
  stranger = devnet.payers[2] as DevAccount;
  requirements = batchRequirements(devnet, {
    payTo: devnet.payee.address,
    receiverAuthorizer: authorizer.address,
    price: PRICE,
  });
  const facilitator = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiverAuthorizer: privateKeyToAccount(authorizer.privateKey),
    offerReceiverAuthorizer: true,
    receiptPollMs: 50,
  });
  server = await startServer(
    createHandler(facilitator, {
      apiKeys: {
        anonymous: true,
        keys: [
          { name: "seller-a", key: SELLER_KEY, receivers: [devnet.payee.address] },
          { name: "seller-b", key: OTHER_SELLER_KEY, receivers: [stranger.address] },
        ],
      },
    }),
    { host: "127.0.0.1", port: 0, log: () => undefined },
  );
}, 60_000);

afterAll(async () => {
  await server?.close();
  await devnet?.stop();
});

const channel = () => officialChannel(devnet, payer, requirements);
const post = (route: string, body: unknown, key?: string) => postJson(server, route, body, key);
const x402 = (payload: unknown, accepted: unknown = requirements) => x402Request(accepted, payload);
const manager = () => managerRequirements(requirements);

/** A refund as the channel manager (or anyone copying its shape) sends it. */
async function refund(amount: bigint, signedBy: DevAccount, voucherAmount: bigint, claims = []) {
  return {
    type: "refund",
    channelConfig: channel().config,
    voucher: await channel().voucher(voucherAmount, signedBy),
    amount: amount.toString(),
    refundNonce: "0",
    claims,
  };
}

async function onChain() {
  const [balance, totalClaimed] = await chainOf(devnet).readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "channels",
    args: [channel().id],
  });
  return { balance, totalClaimed };
}

const ourNonce = () =>
  chainOf(devnet).getTransactionCount({ address: devnet.facilitator.address, blockTag: "pending" });

describe("a refund our receiver authorizer would sign", () => {
  test("is refused to the payer, a stranger and another seller's key; the seller's own key gets it", async () => {
    // The payer opens the channel with 10,000 (the official client, 10 requests' worth).
    const deposit = await officialPayload(devnet, payer, requirements, 10);
    const opened = await post("/settle", x402(deposit));
    expect(opened.body, JSON.stringify(opened.body)).toMatchObject({ success: true });
    expect(await onChain()).toEqual({ balance: 10n * PRICE, totalClaimed: 0n });
    // The seller delivers five requests: vouchers up to 5,000 verify.
    for (let n = 2n; n <= 5n; n++) {
      const paid = await post(
        "/verify",
        x402({
          type: "voucher",
          channelConfig: channel().config,
          voucher: await channel().voucher(n * PRICE),
        }),
      );
      expect(paid.body, JSON.stringify(paid.body)).toMatchObject({ isValid: true });
    }
    const payerBefore = await tokenBalance(devnet, payer.address);
    const nonceBefore = await ourNonce();

    // The payer asks for everything back with its first voucher, anonymously.
    const asPayer = await post("/settle", x402(await refund(10n * PRICE, payer, PRICE), manager()));
    // The x402 dialect answers every refusal 200 with its reason (errors.md); ours, 403 below.
    expect(asPayer.status).toBe(200);
    expect(asPayer.body).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_refund_not_authorized",
    });
    expect(asPayer.body.errorMessage).toContain("this request is anonymous");
    // The same in our dialect: 403.
    const reference = await post("/settle", {
      payload: x402(await refund(10n * PRICE, payer, PRICE), manager()).paymentPayload,
      requirements: manager(),
    });
    expect(reference.status).toBe(403);
    expect(reference.body.error).toBe("refund_not_authorized");
    // A stranger with a voucher it signed itself (junk for this channel).
    const asStranger = await post("/settle", x402(await refund(1n, stranger, PRICE), manager()));
    expect(asStranger.body.errorReason).toBe("invalid_batch_settlement_evm_refund_not_authorized");
    // Another seller's key: it may act for its own receiver, not for this channel's.
    const asOtherSeller = await post(
      "/settle",
      x402(await refund(10n * PRICE, payer, PRICE), manager()),
      OTHER_SELLER_KEY,
    );
    expect(asOtherSeller.body.errorReason).toBe(
      "invalid_batch_settlement_evm_refund_not_authorized",
    );
    expect(asOtherSeller.body.errorMessage).toContain("the API key seller-b does not name it");
    // Nothing was signed or sent: no transaction of ours, the channel and the payer unchanged.
    expect(await ourNonce()).toBe(nonceBefore);
    expect(await onChain()).toEqual({ balance: 10n * PRICE, totalClaimed: 0n });
    expect(await tokenBalance(devnet, payer.address)).toBe(payerBefore);

    // The seller's key, but a voucher the payer never signed: checked at settle as at verify.
    const junkVoucher = await post(
      "/settle",
      x402(await refund(5n * PRICE, stranger, 5n * PRICE), manager()),
      SELLER_KEY,
    );
    expect(junkVoucher.body.errorReason).toBe("invalid_batch_settlement_evm_voucher_signature");
    expect(await ourNonce()).toBe(nonceBefore);

    // The seller itself: its last claim (5,000) rides along, the rest (5,000) goes back.
    const claims: Json = [await channel().claimRow(5n * PRICE)];
    const bySeller = await post(
      "/settle",
      x402(await refund(5n * PRICE, payer, 5n * PRICE, claims), manager()),
      SELLER_KEY,
    );
    expect(bySeller.body, JSON.stringify(bySeller.body)).toMatchObject({
      success: true,
      amount: (5n * PRICE).toString(),
    });
    expect(await onChain()).toEqual({ balance: 5n * PRICE, totalClaimed: 5n * PRICE });
    expect(await tokenBalance(devnet, payer.address)).toBe(payerBefore + 5n * PRICE);
  });

  test("a key that is not one of the server's is 401, even where anonymous requests are served", async () => {
    const answer = await post(
      "/settle",
      x402(await refund(PRICE, payer, PRICE), manager()),
      "not-a-key-of-this-server-000",
    );
    expect(answer.status).toBe(401);
    expect(answer.body.error).toBe("unauthorized");
  });
});
