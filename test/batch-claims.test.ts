/**
 * Claims batched across channels and receivers (src/evm/batch-settlement/batcher.ts): claim
 * requests that arrive together go out as one transaction, whoever signed them; a claim that
 * cannot go through is refused alone and the others still land; a retried claim gets the same
 * transaction, not a second one. Deposits and vouchers from the official client, on the devnet.
 */
import { computeChannelId, signVoucher } from "@x402/evm/batch-settlement/client";
import type { Address, Hex, LocalAccount } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import {
  type BatchRequirements,
  batchRequirements,
  officialChannelConfig,
  officialPayload,
  officialSigner,
} from "./helpers/batch.js";
import { signClaimBatch } from "./helpers/batch-sign.js";
import { chainOf, payerHolding } from "./helpers/chain.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

const PRICE = 1_000n;

let devnet: Devnet;
let facilitator: Facilitator;
/** Ours: claims of its channels we sign. */
let ourAuthorizer: LocalAccount;
/** A seller's own: it signs its claims itself. */
const sellerAuthorizer = privateKeyToAccount(generatePrivateKey());
const receivers = [
  privateKeyToAccount(generatePrivateKey()).address,
  privateKeyToAccount(generatePrivateKey()).address,
];

beforeAll(async () => {
  devnet = await startDevnet();
  ourAuthorizer = privateKeyToAccount((devAccounts[7] as DevAccount).privateKey);
  facilitator = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiverAuthorizer: ourAuthorizer,
    // Long enough that requests sent together surely meet; short enough for a test.
    claimBatch: { maxWaitMs: 400 },
  });
});
afterAll(async () => {
  await devnet?.stop();
});

const requirements = (payTo: Address, receiverAuthorizer: Address) =>
  batchRequirements(devnet, { payTo, receiverAuthorizer, price: PRICE });

const settle = (accepted: BatchRequirements, payload: Record<string, unknown>) =>
  handleSettle(facilitator, {
    x402Version: 2,
    paymentPayload: { x402Version: 2, accepted, payload },
    paymentRequirements: accepted,
  });

const depositFor = (payer: DevAccount, accepted: BatchRequirements) =>
  officialPayload(devnet, payer, accepted);

/** A channel from `payer` to `receiver`, funded through us; returns a claim row for `amount`. */
async function openChannel(payer: DevAccount, receiver: Address, authorizer: Address) {
  const accepted = requirements(receiver, authorizer);
  const deposited = await settle(accepted, await depositFor(payer, accepted));
  expect(deposited.body.success, JSON.stringify(deposited.body)).toBe(true);
  const config = officialChannelConfig(devnet, payer, accepted);
  const id = computeChannelId(config, devnet.network) as Hex;
  return {
    id,
    accepted,
    async row(amount: bigint) {
      const voucher = await signVoucher(
        officialSigner(devnet, payer),
        id,
        amount.toString(),
        devnet.network,
      );
      return {
        voucher: { channel: config, maxClaimableAmount: amount.toString() },
        signature: voucher.signature,
        totalClaimed: amount.toString(),
      };
    },
  };
}

async function claimedOf(id: Hex): Promise<bigint> {
  const [, totalClaimed] = await chainOf(devnet).readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "channels",
    args: [id],
  });
  return totalClaimed;
}

describe("claims batched across channels and receivers", () => {
  test("three sellers' claims sent together land in one transaction; a bad one is refused alone; a retry gets the same transaction", async () => {
    const [p1, p2, p3, p4] = devnet.payers as DevAccount[];
    const a = await openChannel(p1 as DevAccount, receivers[0] as Address, ourAuthorizer.address);
    const b = await openChannel(p2 as DevAccount, receivers[1] as Address, ourAuthorizer.address);
    const c = await openChannel(
      p3 as DevAccount,
      receivers[0] as Address,
      sellerAuthorizer.address,
    );
    const d = await openChannel(p4 as DevAccount, receivers[1] as Address, ourAuthorizer.address);

    // The seller signs its own claim batch (the official server scheme's receiverAuthorizerSigner).
    const cRow = await c.row(3n * PRICE);
    const sellerSignature = await signClaimBatch(sellerAuthorizer, [cRow], devnet.chainId);
    // Claims more than its voucher allows: the contract refuses it.
    const bad = { ...(await d.row(PRICE)), totalClaimed: (2n * PRICE).toString() };

    const claim = (accepted: typeof a.accepted, payload: Record<string, unknown>) =>
      settle(accepted, { type: "claim", ...payload });
    const head = await chainOf(devnet).getBlockNumber();
    const answers = await Promise.all([
      claim(a.accepted, { claims: [await a.row(2n * PRICE)] }),
      claim(b.accepted, { claims: [await b.row(4n * PRICE)] }),
      claim(c.accepted, { claims: [cRow], claimAuthorizerSignature: sellerSignature }),
      claim(d.accepted, { claims: [bad] }),
    ]);
    const [ra, rb, rc, rd] = answers.map((r) => r.body);
    expect(ra?.success, JSON.stringify(ra)).toBe(true);
    expect(rb?.transaction).toBe(ra?.transaction);
    expect(rc?.transaction).toBe(ra?.transaction);
    expect(rd).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_claim_simulation_failed",
    });
    expect(await claimedOf(a.id)).toBe(2n * PRICE);
    expect(await claimedOf(b.id)).toBe(4n * PRICE);
    expect(await claimedOf(c.id)).toBe(3n * PRICE);
    expect(await claimedOf(d.id)).toBe(0n);
    // One transaction of ours since the claims went out.
    const receipt = await chainOf(devnet).getTransactionReceipt({ hash: ra?.transaction as Hex });
    expect(receipt.status).toBe("success");
    const ours = await transactionsFrom(devnet.facilitator.address as Address, head + 1n);
    expect(ours).toEqual([ra?.transaction]);

    // The same claim again: the same transaction, nothing sent.
    const again = await claim(a.accepted, { claims: [await a.row(2n * PRICE)] });
    expect(again.body).toMatchObject({ success: true, transaction: ra?.transaction });
    expect(await transactionsFrom(devnet.facilitator.address as Address, head + 1n)).toEqual([
      ra?.transaction,
    ]);
  });
});

describe("one key, many kinds of transaction at once (x402-foundation #2471)", () => {
  test("a settle, a claim, a deposit and an exact payment sent together all land, on consecutive nonces of our key", async () => {
    const p5 = devnet.payers[4] as DevAccount;
    const fresh = await payerHolding(devnet, 100_000n);
    const b = await openChannel(fresh, receivers[1] as Address, ourAuthorizer.address);
    const exactRequirements = requirementsV2(devnet, { amount: "1000" });
    const exactPayment = await clientPayload(p5, exactRequirements);
    const depositPayment = await depositFor(
      p5,
      requirements(receivers[0] as Address, ourAuthorizer.address),
    );
    const us = devnet.facilitator.address as Address;
    const head = await chainOf(devnet).getBlockNumber();
    const answers = await Promise.all([
      settle(b.accepted, {
        type: "settle",
        receiver: receivers[0],
        token: devnet.token.address,
      }),
      settle(b.accepted, { type: "claim", claims: [await b.row(5n * PRICE)] }),
      settle(requirements(receivers[0] as Address, ourAuthorizer.address), depositPayment),
      handleSettle(facilitator, {
        x402Version: 2,
        paymentPayload: exactPayment,
        paymentRequirements: exactRequirements,
      }),
    ]);
    for (const answer of answers)
      expect(answer.body.success, JSON.stringify(answer.body)).toBe(true);
    const sent = await transactionsFrom(us, head + 1n);
    expect(sent).toHaveLength(4);
    const nonces = await Promise.all(
      sent.map(async (hash) => (await chainOf(devnet).getTransaction({ hash })).nonce),
    );
    const sorted = [...nonces].sort((x, y) => x - y);
    expect(sorted).toEqual(sorted.map((_, i) => (sorted[0] as number) + i));
    for (const hash of sent) {
      expect((await chainOf(devnet).getTransactionReceipt({ hash })).status).toBe("success");
    }
  });
});

async function transactionsFrom(from: Address, fromBlock: bigint): Promise<Hex[]> {
  const chain = chainOf(devnet);
  const head = await chain.getBlockNumber();
  const hashes: Hex[] = [];
  for (let n = fromBlock; n <= head; n++) {
    const block = await chain.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      if (tx.from.toLowerCase() === from.toLowerCase()) hashes.push(tx.hash);
    }
  }
  return hashes;
}
