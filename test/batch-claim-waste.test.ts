/**
 * Claims cost us gas, so a claim that can only waste it is not sent. Two attacks, on a real anvil
 * devnet with the project's batch-settlement contract, channels opened by the official client:
 *
 * - Claims that claim nothing: a channel never opened, or a total at or below what its channel
 *   already claimed, passes every simulation (the contract returns early). Before: each was sent
 *   and answered success (20 in a row: 20 transactions, 872,400 gas). Now: `nothing_to_settle`
 *   before anything is signed or sent.
 * - A row that reverts only when mined sinks a claim batch: here the payer of one channel races the
 *   batch with `finalizeWithdraw` after its withdraw delay, so its row (simulated fine a moment
 *   before) is over the balance when mined. Before: the batch reverted, then every claim was sent
 *   alone (the bad one reverting again). Now: the rows that fail alone are refused and charged to
 *   their payer, and the others go out once more, together: two transactions of ours, one reverted.
 *   When the race is won before the batch is sent (its gas estimate fails), one transaction.
 */
import { createTestClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import { x402BatchSettlementAbi } from "../src/evm/devnet/artifacts.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import {
  batchRequirements,
  managerRequirements,
  officialChannel,
  officialPayload,
  x402Request,
} from "./helpers/batch.js";
import { chainOf } from "./helpers/chain.js";
import { clientsOf } from "./helpers/permit2.js";

// biome-ignore lint/suspicious/noExplicitAny: wire objects are plain JSON here.
type Json = any;

const PRICE = 1_000n;
const WITHDRAW_DELAY = 900;
/** Long enough for every claim of a round to join one batch. */
const BATCH_WAIT_MS = 1_500;

let devnet: Devnet;
let facilitator: Facilitator;
let authorizer: DevAccount;

beforeAll(async () => {
  devnet = await startDevnet();
  authorizer = devAccounts[7] as DevAccount;
  facilitator = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiverAuthorizer: privateKeyToAccount(authorizer.privateKey),
    claimBatch: { maxRows: 100, maxWaitMs: BATCH_WAIT_MS },
    receiptPollMs: 50,
  });
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
});

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });

/** A seller of its own per test, so channels never meet across tests. */
function seller() {
  const payTo = privateKeyToAccount(generatePrivateKey()).address;
  const offer = batchRequirements(devnet, {
    payTo,
    receiverAuthorizer: authorizer.address,
    price: PRICE,
  });
  // The chain's clock runs ahead of ours once a withdrawal was waited out.
  return { ...offer, maxTimeoutSeconds: 86_400 };
}
type Offer = ReturnType<typeof seller>;

const channel = (payer: DevAccount, offer: Offer) => officialChannel(devnet, payer, offer);

/** Opens `payer`'s channel with `seller` for 5 requests' worth, through us. */
async function open(payer: DevAccount, offer: Offer) {
  const deposit = await officialPayload(devnet, payer, offer, 5);
  const reply = await handleSettle(facilitator, x402Request(offer, deposit));
  expect(reply.body, JSON.stringify(reply.body)).toMatchObject({ success: true });
}

/** A claim row for `total` of `payer`'s channel, with the voucher for `total` `signer` signed. */
async function row(payer: DevAccount, offer: Offer, total: bigint, signer: DevAccount = payer) {
  const { claimRow, voucher } = channel(payer, offer);
  return claimRow(total, await voucher(total, signer));
}

const claim = (offer: Offer, rows: Json[]) =>
  handleSettle(
    facilitator,
    x402Request(managerRequirements(offer), { type: "claim", claims: rows }),
  );

const ourNonce = () =>
  chainOf(devnet).getTransactionCount({ address: devnet.facilitator.address, blockTag: "pending" });

async function claimedOf(payer: DevAccount, offer: Offer) {
  const [, totalClaimed] = await chainOf(devnet).readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "channels",
    args: [channel(payer, offer).id],
  });
  return totalClaimed;
}

describe("a claim that would move nothing", () => {
  test("is refused before anything is sent: a channel never opened, a total already claimed", async () => {
    const offer = seller();
    const [payer, stranger] = devnet.payers as [DevAccount, DevAccount];
    const before = await ourNonce();
    // Never opened, nothing claimed, a voucher signed by someone else: 20 in a row, 20 at once.
    const junk = { ...(await row(payer, offer, 0n, stranger)), totalClaimed: "0" };
    for (let i = 0; i < 20; i++) {
      const reply = await claim(offer, [junk]);
      expect(reply.body).toMatchObject({
        success: false,
        errorReason: "invalid_batch_settlement_evm_nothing_to_settle",
      });
      expect(reply.body.errorMessage).toContain("nothing to claim");
    }
    const many = await Promise.all(Array.from({ length: 20 }, () => claim(offer, [junk])));
    for (const reply of many) expect(reply.body.success).toBe(false);
    expect(await ourNonce()).toBe(before);

    // Opened and claimed to 2,000: the same total again, or less, moves nothing either.
    await open(payer, offer);
    const landed = await claim(offer, [await row(payer, offer, 2n * PRICE)]);
    expect(landed.body, JSON.stringify(landed.body)).toMatchObject({ success: true });
    const sentOnce = await ourNonce();
    // The very same claim asked again is answered with its transaction, not refused.
    expect((await claim(offer, [await row(payer, offer, 2n * PRICE)])).body).toMatchObject({
      success: true,
      transaction: landed.body.transaction,
    });
    const lower = await claim(offer, [await row(payer, offer, PRICE)]);
    expect(lower.body.errorReason).toBe("invalid_batch_settlement_evm_nothing_to_settle");
    // A claim with a row that moves and one that does not claims only the one that moves.
    const mixed = await claim(offer, [junk, await row(payer, offer, 3n * PRICE)]);
    expect(mixed.body, JSON.stringify(mixed.body)).toMatchObject({ success: true });
    expect(await claimedOf(payer, offer)).toBe(3n * PRICE);
    expect(await ourNonce()).toBe(sentOnce + 1);
  }, 60_000);
});

describe("a batch that one row sinks", () => {
  /** Four channels of one seller, 5,000 each; the last payer starts a withdrawal and waits it out. */
  async function fourChannels() {
    const offer = seller();
    const payers = devnet.payers.slice(0, 4) as DevAccount[];
    for (const payer of payers) await open(payer, offer);
    const racer = payers[3] as DevAccount;
    const { wallet, publicClient } = clientsOf(devnet, racer);
    const contract = { address: SETTLEMENT_ADDRESS, abi: x402BatchSettlementAbi } as const;
    const started = await wallet.writeContract({
      ...contract,
      functionName: "initiateWithdraw",
      args: [channel(racer, offer).config, 5n * PRICE],
    });
    await publicClient.waitForTransactionReceipt({ hash: started });
    await anvil().increaseTime({ seconds: WITHDRAW_DELAY + 1 });
    await anvil().mine({ blocks: 1 });
    /** The racer takes its deposit back, ahead of anything else in the pool. */
    const finalize = () =>
      wallet.writeContract({
        ...contract,
        functionName: "finalizeWithdraw",
        args: [channel(racer, offer).config],
        // Its own estimate ran on the pending block, behind the batch: it would fall short.
        gas: 200_000n,
        maxPriorityFeePerGas: 20_000_000_000n,
        maxFeePerGas: 40_000_000_000n,
      });
    const rows = await Promise.all(payers.map((p) => row(p, offer, 2n * PRICE)));
    return { offer, payers, racer, finalize, rows };
  }

  async function nonceAbove(n: number) {
    for (let i = 0; i < 200 && (await ourNonce()) <= n; i++) await sleep(25);
  }

  test("reverting when mined: the row is refused and charged, the rest go once more together", async () => {
    const { offer, payers, racer, finalize, rows } = await fourChannels();
    const before = await ourNonce();
    // Blocks only when the test mines them, so the racer can be put ahead of the batch.
    await anvil().setAutomine(false);
    await anvil().setIntervalMining({ interval: 0 });
    let mining: NodeJS.Timeout | undefined;
    try {
      // Each simulates fine now; they wait together for the batch.
      const answers = Promise.all(rows.map((r) => claim(offer, [r])));
      await nonceAbove(before);
      // The batch is in the pool: the racer goes first in the same block.
      const hash = await finalize();
      await anvil().mine({ blocks: 1 });
      const raced = await chainOf(devnet).getTransactionReceipt({ hash });
      expect(raced.status).toBe("success");
      mining = setInterval(() => void anvil().mine({ blocks: 1 }), 100);
      const replies = await answers;
      const [a, b, c, d] = replies.map((r) => r.body);
      expect(d).toMatchObject({
        success: false,
        errorReason: "invalid_batch_settlement_evm_claim_simulation_failed",
      });
      for (const reply of [a, b, c])
        expect(reply, JSON.stringify(reply)).toMatchObject({ success: true });
      expect(b.transaction).toBe(a.transaction);
      expect(c.transaction).toBe(a.transaction);
    } finally {
      clearInterval(mining);
      await anvil().setIntervalMining({ interval: 1 });
      await anvil().setAutomine(true);
    }
    // Two transactions of ours: the batch that reverted, and the three good rows once more.
    expect(await ourNonce()).toBe(before + 2);
    for (const payer of payers.slice(0, 3)) expect(await claimedOf(payer, offer)).toBe(2n * PRICE);
    expect(await claimedOf(racer, offer)).toBe(0n);
    // The gas went on the racer's account: its wasted gas counts against the chain's budget.
    expect(facilitator.gasAtRisk.wastedGas(devnet.chainId)).toBeGreaterThan(0n);
  }, 90_000);

  test("failing before it is sent: the row is refused, the rest go in one transaction", async () => {
    const { offer, payers, racer, finalize, rows } = await fourChannels();
    const before = await ourNonce();
    const answers = Promise.all(rows.map((r) => claim(offer, [r])));
    // Simulated and waiting for the batch; the racer lands first.
    await sleep(BATCH_WAIT_MS / 3);
    await chainOf(devnet).waitForTransactionReceipt({ hash: await finalize() });
    const replies = (await answers).map((r) => r.body);
    expect(replies[3]).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_claim_simulation_failed",
    });
    for (const reply of replies.slice(0, 3)) expect(reply).toMatchObject({ success: true });
    expect(await ourNonce()).toBe(before + 1);
    for (const payer of payers.slice(0, 3)) expect(await claimedOf(payer, offer)).toBe(2n * PRICE);
    expect(await claimedOf(racer, offer)).toBe(0n);
  }, 90_000);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
