/**
 * Every kind of transaction we send is followed after a `submitted` answer (issue 29): a Permit2
 * payment, an `upto` payment, and each batch-settlement action (a deposit, a claim, a settle, a
 * refund). Each is answered `submitted`, then dropped from the node's pool; nobody retries. One
 * reconciler pass sends the same bytes again and records it landed; the retry gets no second
 * success (a payment: `nonce_already_used`; a claim: the same transaction; a settle or refund:
 * `duplicate_settlement`). Before: the reconciler skipped every transaction without a Transfer of
 * its own (the channel actions), so the claim, settle and refund stayed dropped and open. On a
 * real anvil (blocks mined by hand), payloads from the official clients, the journal file store.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createTestClient, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  devAccounts,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { handleSettle } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import {
  batchRequirements,
  managerRequirements,
  officialChannel,
  officialPayload,
  x402Request,
} from "./helpers/batch.js";
import { chainOf, mineWhile } from "./helpers/chain.js";
import { officialPermit2Payload, permit2Requirements } from "./helpers/permit2.js";
import { officialUptoPayload, uptoOffer } from "./helpers/upto.js";

const PRICE = 1_000n;
const AUTHORIZER = devAccounts[7] as DevAccount;
const OPERATOR = { name: "operator", receivers: "any" as const };

let devnet: Devnet;
let dir: string;
let journal: Journal;
let facilitator: Facilitator;

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet({ mining: "manual" }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-submitted-kinds-")),
  ]);
  journal = new Journal(path.join(dir, "journal.jsonl"));
  facilitator = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiverAuthorizer: privateKeyToAccount(AUTHORIZER.privateKey),
    claimBatch: { maxRows: 100, maxWaitMs: 0 },
    receiptPollMs: 50,
    confirmTimeoutMs: 1_500,
    replaceAfterMs: 60_000,
    journal,
  });
}, 60_000);

afterAll(async () => {
  journal?.close();
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ours = () =>
  chainOf(devnet).getTransactionCount({ address: devnet.facilitator.address, blockTag: "pending" });

/** Mines until `work` settles (blocks are mined by hand on this devnet). */
const mining = <T>(work: Promise<T>) => mineWhile(devnet.rpcUrl, work);

/**
 * Settles `body` answered `submitted`, drops its transaction, and has one reconciler pass send it
 * again; then the same body again must not be a second success (`retry` says what it is).
 */
async function submittedThenDropped(
  name: string,
  body: unknown,
  retry: Record<string, unknown>,
  options: { caller?: typeof OPERATOR } = {},
) {
  const answered = await handleSettle(facilitator, body, { waitUntil: "submitted", ...options });
  expect(answered.body, `${name}: ${JSON.stringify(answered.body)}`).toMatchObject({
    success: true,
  });
  const hash = (answered.body.transaction ?? answered.body.transactionHash) as Hex;
  const before = await ours();
  await anvil().dropTransaction({ hash });
  expect(await ours(), name).toBe(before - 1);
  const open = await journal.openSettlements(0);
  expect(
    open.map((e) => e.state),
    name,
  ).toContain("submitted");

  const [pass] = await Promise.all([
    facilitator.reconcile(),
    (async () => {
      for (let i = 0; i < 200 && (await ours()) < before; i++) await sleep(25);
      await anvil().mine({ blocks: 1 });
    })(),
  ]);
  expect(pass, name).toEqual([expect.objectContaining({ outcome: "landed", transaction: hash })]);
  expect((await chainOf(devnet).getTransactionReceipt({ hash })).status, name).toBe("success");
  expect(await facilitator.reconcile(), name).toEqual([]);

  const again = await mining(handleSettle(facilitator, body, options));
  expect(again.body, `${name} again: ${JSON.stringify(again.body)}`).toMatchObject(retry);
  expect(await ours(), name).toBe(before);
  return hash;
}

test("a Permit2 payment, an upto payment, and a channel's deposit, claim, settle and refund", async () => {
  const [permit2Payer, uptoPayer, channelPayer] = devnet.payers as DevAccount[];
  for (const payer of [permit2Payer, uptoPayer] as DevAccount[]) {
    await mining(approvePermit2(devnet, payer, devnet.permitToken.address));
  }

  const permit2 = permit2Requirements(devnet, devnet.permitToken, { amount: "1000" });
  const permit2Payload = await officialPermit2Payload(devnet, permit2Payer as DevAccount, permit2);
  await submittedThenDropped(
    "Permit2",
    { x402Version: 2, paymentPayload: permit2Payload, paymentRequirements: permit2 },
    { success: false, errorReason: expect.stringMatching(/nonce_already_used/) },
  );

  const upto = uptoOffer(devnet, 5000n);
  const uptoPayload = await officialUptoPayload(devnet, uptoPayer as DevAccount, upto);
  await submittedThenDropped(
    "upto",
    {
      x402Version: 2,
      paymentPayload: uptoPayload,
      paymentRequirements: { ...upto, amount: "3000" },
    },
    { success: false, errorReason: expect.stringMatching(/nonce_already_used/) },
  );

  const offer = batchRequirements(devnet, {
    payTo: devnet.payee.address,
    receiverAuthorizer: AUTHORIZER.address,
    price: PRICE,
  });
  const payer = channelPayer as DevAccount;
  const { config, voucher, claimRow } = officialChannel(devnet, payer, offer);
  const deposit = await officialPayload(devnet, payer, offer, 10);
  await submittedThenDropped("deposit", x402Request(offer, deposit), {
    success: false,
    errorReason: expect.stringMatching(/nonce_already_used/),
  });

  const manager = managerRequirements(offer);
  const claim = x402Request(manager, { type: "claim", claims: [await claimRow(3n * PRICE)] });
  const claimed = await submittedThenDropped("claim", claim, { success: true });
  expect((await mining(handleSettle(facilitator, claim))).body.transaction).toBe(claimed);

  const sweep = x402Request(manager, {
    type: "settle",
    receiver: devnet.payee.address,
    token: offer.asset,
  });
  await submittedThenDropped("settle", sweep, { success: false });

  const refund = x402Request(manager, {
    type: "refund",
    channelConfig: config,
    voucher: await voucher(3n * PRICE),
    amount: (2n * PRICE).toString(),
    refundNonce: "0",
    claims: [],
  });
  await submittedThenDropped(
    "refund",
    refund,
    { success: false, errorReason: expect.stringMatching(/duplicate_settlement/) },
    { caller: OPERATOR },
  );
}, 180_000);
