/**
 * batch-settlement verdicts, ours against the official facilitator's (x402 2.27,
 * `@x402/evm/batch-settlement/facilitator`), case by case on one devnet: deposits, vouchers,
 * claims, settles and refunds, valid and refused. Our x402-dialect answer must equal theirs:
 * `isValid`/`invalidReason` (verify), `success`/`errorReason` (settle), and for valid answers the
 * payer and the channel snapshot in `extra` (settle: `extra.channelState`) where both give one.
 * A few refusals are also asked in the reference dialect, which answers our error table's code.
 *
 * Both facilitators hold the same receiver-authorizer key (dev account 7); they settle from
 * different accounts (ours: the devnet's facilitator; theirs: dev account 6), so their nonces
 * never collide.
 *
 * Fairness of settle-type cases (deposit settle, claim, settle, refund): each runs on the same
 * channel in the same chain state for both. We take an anvil snapshot, let the official
 * facilitator settle, revert to the snapshot, then let ours settle the same request; ours is the
 * one whose effects stay. That order matters: our facilitator remembers what it sent (journal,
 * nonce lane, channel book), the official one keeps nothing across requests that a revert could
 * make stale (viem asks the chain for its nonce on every send).
 *
 * Our deliberate differences are not parity cases; they are asserted on their own at the end.
 */
import { x402Client } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme as BatchClient,
  computeChannelId,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as BatchFacilitator } from "@x402/evm/batch-settlement/facilitator";
import { createTestClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { x402BatchSettlementAbi } from "../src/evm/devnet/artifacts.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  devAccounts,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import type { Caller } from "../src/protocol/request.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { payerHolding } from "./helpers/chain.js";
import { clientsOf } from "./helpers/permit2.js";
import { referenceSigner } from "./helpers/x402.js";

const PRICE = 1_000n;
/** The official client deposits 5 requests' worth on an empty channel. */
const DEPOSIT = 5n * PRICE;
const WITHDRAW_DELAY = 900;

// biome-ignore lint/suspicious/noExplicitAny: wire objects are plain JSON here.
type Json = any;

let devnet: Devnet;
let ours: Facilitator;
let theirs: x402Facilitator;
let authorizer: DevAccount;
/** Payers: A the main EIP-3009 channel, B Permit2 approved, C Permit2 not approved, D no channel. */
let payerA: DevAccount;
let payerB: DevAccount;
let payerC: DevAccount;
let payerD: DevAccount;

const tally = { cases: 0, equal: 0 };
/** The caller an API key bound to the payee names. */
let SELLER: Caller;
/** Payer A's first deposit, settled by both (see sameSettle). */
let firstDeposit: Json;

beforeAll(async () => {
  devnet = await startDevnet();
  authorizer = devAccounts[7] as DevAccount;
  ours = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiverAuthorizer: privateKeyToAccount(authorizer.privateKey),
    receiptPollMs: 50,
  });
  theirs = new x402Facilitator();
  theirs.register(
    devnet.network,
    new BatchFacilitator(
      referenceSigner(devnet, devAccounts[6] as DevAccount),
      privateKeyToAccount(authorizer.privateKey),
    ),
  );
  SELLER = { name: "seller", receivers: [devnet.payee.address] };
  [payerA, payerB, payerC, payerD] = devnet.payers as [
    DevAccount,
    DevAccount,
    DevAccount,
    DevAccount,
  ];
});

afterAll(async () => {
  console.log(`parity: ${tally.cases} cases, ${tally.equal} equal`);
  await devnet?.stop();
});

type Method = "eip3009" | "permit2";

function requirements(method: Method = "eip3009", extra: Record<string, unknown> = {}): Json {
  return {
    scheme: "batch-settlement",
    network: devnet.network,
    amount: PRICE.toString(),
    asset: devnet.token.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: {
      receiverAuthorizer: privateKeyToAccount(authorizer.privateKey).address,
      withdrawDelay: WITHDRAW_DELAY,
      name: devnet.token.name,
      version: devnet.token.version,
      ...(method === "permit2" ? { assetTransferMethod: "permit2" } : {}),
      ...extra,
    },
  };
}

function clientSigner(payer: DevAccount) {
  return toClientEvmSigner(
    privateKeyToAccount(payer.privateKey),
    clientsOf(devnet).publicClient as never,
  );
}

/** What the official client sends for one request (a fresh client, reading the chain). */
async function pay(payer: DevAccount, accepted: Json = requirements()): Promise<Json> {
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(devnet.network, new BatchClient(clientSigner(payer)));
  return client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [accepted],
  } as Json);
}

const configOf = (payer: DevAccount, accepted: Json = requirements()) =>
  new BatchClient(clientSigner(payer)).buildChannelConfig(accepted);
const channelIdOf = (payer: DevAccount) => computeChannelId(configOf(payer), devnet.network);

const voucherOf = (signer: DevAccount, channelId: Hex, amount: bigint) =>
  signVoucher(clientSigner(signer), channelId, amount.toString(), devnet.network);

/** A voucher-only payment, as the official client sends on a funded channel. */
async function voucherPayment(payer: DevAccount, amount: bigint, type = "voucher"): Promise<Json> {
  return {
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepted: requirements(),
    payload: {
      type,
      channelConfig: configOf(payer),
      voucher: await voucherOf(payer, channelIdOf(payer), amount),
    },
  };
}

/** A payer-signed claim row, as a receiver's channel manager keeps it. */
async function claimRow(payer: DevAccount, maxClaimable: bigint, totalClaimed = maxClaimable) {
  const voucher = await voucherOf(payer, channelIdOf(payer), maxClaimable);
  return {
    voucher: { channel: configOf(payer), maxClaimableAmount: maxClaimable.toString() },
    signature: voucher.signature,
    totalClaimed: totalClaimed.toString(),
  };
}

/** A claim, settle or refund as the server's channel manager sends it. */
function action(payload: Record<string, unknown>): Json {
  return {
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepted: { ...requirements(), amount: "0", extra: {} },
    payload,
  };
}

const lower = (value: unknown) => (typeof value === "string" ? value.toLowerCase() : value);

function snapshotOf(state: Json) {
  if (!state || typeof state !== "object") return undefined;
  return {
    channelId: lower(state.channelId),
    balance: state.balance,
    totalClaimed: state.totalClaimed,
    withdrawRequestedAt: state.withdrawRequestedAt,
    refundNonce: state.refundNonce,
  };
}

/** The parts of a verify answer that must be equal. */
function verdictOfVerify(answer: Json) {
  if (answer.threw) return { threw: answer.threw };
  if (!answer.isValid) return { isValid: false, invalidReason: answer.invalidReason };
  return { isValid: true, payer: lower(answer.payer), extra: snapshotOf(answer.extra) };
}

function verdictOfSettle(answer: Json, other: Json) {
  if (answer.threw) return { threw: answer.threw };
  if (!answer.success) return { success: false, errorReason: answer.errorReason };
  // The payer where both name one (the official claim and settle answers name none).
  const payer = answer.payer && other?.payer ? lower(answer.payer) : undefined;
  return {
    success: true,
    payer,
    amount: answer.amount,
    channelState: snapshotOf(answer.extra?.channelState),
  };
}

async function theirVerify(payment: Json, accepted: Json) {
  try {
    return await theirs.verify(payment, accepted);
  } catch (error) {
    return { threw: (error as Error).message };
  }
}

async function theirSettle(payment: Json, accepted: Json) {
  try {
    return await theirs.settle(payment, accepted);
  } catch (error) {
    return { threw: (error as Error).message };
  }
}

const x402Body = (payment: Json, accepted: Json) => ({
  x402Version: 2,
  paymentPayload: payment,
  paymentRequirements: accepted,
});

/** Asks both to verify; asserts the same verdict. Returns both answers. */
async function sameVerify(payment: Json, accepted: Json = requirements()) {
  const official = await theirVerify(payment, accepted);
  const reply = await handleVerify(ours, x402Body(payment, accepted));
  const a = verdictOfVerify(reply.body);
  const b = verdictOfVerify(official);
  tally.cases++;
  if (JSON.stringify(a) === JSON.stringify(b)) tally.equal++;
  if (process.env.PARITY_DEBUG) console.log(JSON.stringify({ a, b }));
  expect(a).toEqual(b);
  return { ours: reply.body as Json, theirs: official as Json };
}

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });

/** The official facilitator settles first, the chain is reverted, then ours settles. */
async function sameSettle(payment: Json, accepted: Json = requirements()) {
  const snapshot = await anvil().snapshot();
  const official = await theirSettle(payment, accepted);
  await anvil().revert({ id: snapshot });
  // The official facilitator signs a refund for whoever asks; ours only for the channel's seller,
  // so ours is asked as the seller (the payee's API key) would.
  const reply = await handleSettle(ours, x402Body(payment, accepted), { caller: SELLER });
  const a = verdictOfSettle(reply.body, official);
  const b = verdictOfSettle(official, reply.body);
  tally.cases++;
  if (JSON.stringify(a) === JSON.stringify(b)) tally.equal++;
  if (process.env.PARITY_DEBUG) console.log(JSON.stringify({ a, b }));
  expect(a).toEqual(b);
  return { ours: reply.body as Json, theirs: official as Json };
}

/** Our reference dialect (no x402Version wrapper): our error table's code. */
async function referenceCode(op: "verify" | "settle", payment: Json, accepted: Json) {
  const body = { payload: payment, requirements: accepted };
  const reply = op === "verify" ? await handleVerify(ours, body) : await handleSettle(ours, body);
  expect(reply.body.success).toBe(false);
  return reply.body.error;
}

const other = () => privateKeyToAddress(generatePrivateKey());

describe("deposits (verify)", () => {
  test("valid EIP-3009 deposit", async () => {
    const payment = await pay(payerA);
    expect(payment.payload.type).toBe("deposit");
    const { theirs: official } = await sameVerify(payment);
    expect(official).toMatchObject({ isValid: true, extra: { balance: "0" } });
  });

  test("valid Permit2 deposit (the payer approved Permit2)", async () => {
    await approvePermit2(devnet, payerB, devnet.token.address);
    const payment = await pay(payerB, requirements("permit2"));
    expect(payment.payload.deposit.authorization.permit2Authorization).toBeDefined();
    const { theirs: official } = await sameVerify(payment, requirements("permit2"));
    expect(official.isValid).toBe(true);
  });

  test("wrong receiver (payTo differs)", async () => {
    const payment = await pay(payerA);
    const accepted = { ...requirements(), payTo: other() };
    const { theirs: official } = await sameVerify(payment, accepted);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_receiver_mismatch");
    expect(await referenceCode("verify", payment, accepted)).toBe("channel_mismatch");
  });

  test("receiver authorizer differs from extra.receiverAuthorizer", async () => {
    const payment = await pay(payerA);
    const { theirs: official } = await sameVerify(
      payment,
      requirements("eip3009", { receiverAuthorizer: other() }),
    );
    expect(official.invalidReason).toBe(
      "invalid_batch_settlement_evm_receiver_authorizer_mismatch",
    );
  });

  test("token differs from asset", async () => {
    const payment = await pay(payerA);
    const { theirs: official } = await sameVerify(payment, {
      ...requirements(),
      asset: devnet.permitToken.address,
    });
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_token_mismatch");
  });

  test("withdrawDelay differs from extra.withdrawDelay", async () => {
    const payment = await pay(payerA);
    const { theirs: official } = await sameVerify(
      payment,
      requirements("eip3009", { withdrawDelay: 1800 }),
    );
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_withdraw_delay_mismatch");
  });

  test("withdrawDelay out of range (60 s)", async () => {
    const accepted = requirements("eip3009", { withdrawDelay: 60 });
    const payment = await pay(payerA, accepted);
    const { theirs: official } = await sameVerify(payment, accepted);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_withdraw_delay_out_of_range");
  });

  test("channelId not the config's", async () => {
    const payment = await pay(payerA);
    payment.payload.voucher.channelId = channelIdOf(payerB);
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_channel_id_mismatch");
  });

  test("expired validBefore", async () => {
    const payment = await pay(payerA);
    payment.payload.deposit.authorization.erc3009Authorization.validBefore = String(
      Math.floor(Date.now() / 1000),
    );
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe(
      "invalid_batch_settlement_evm_payload_authorization_valid_before",
    );
  });

  test("ReceiveWithAuthorization signed by another key", async () => {
    const payment = await pay(payerA);
    const forged = await pay(payerD);
    payment.payload.deposit.authorization.erc3009Authorization.signature =
      forged.payload.deposit.authorization.erc3009Authorization.signature;
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe(
      "invalid_batch_settlement_evm_receive_authorization_signature",
    );
  });

  test("voucher signed by the wrong key", async () => {
    const payment = await pay(payerA);
    payment.payload.voucher = await voucherOf(payerD, channelIdOf(payerA), PRICE);
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_voucher_signature");
  });

  test("voucher over balance + deposit", async () => {
    const payment = await pay(payerA);
    payment.payload.voucher = await voucherOf(payerA, channelIdOf(payerA), DEPOSIT + 1n);
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_cumulative_exceeds_balance");
    expect(await referenceCode("verify", payment, requirements())).toBe("voucher_exceeds_balance");
  });

  test("payer holds less than the deposit", async () => {
    const poor = await payerHolding(devnet, 10n);
    const payment = await pay(poor);
    expect(payment.payload.type).toBe("deposit");
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_insufficient_balance");
    expect(await referenceCode("verify", payment, requirements())).toBe("insufficient_funds");
  });

  test("Permit2 without allowance", async () => {
    const payment = await pay(payerC, requirements("permit2"));
    const { theirs: official } = await sameVerify(payment, requirements("permit2"));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_permit2_allowance_required");
  });

  test("Permit2 to the wrong spender", async () => {
    const payment = await pay(payerB, requirements("permit2"));
    payment.payload.deposit.authorization.permit2Authorization.spender = other();
    const { theirs: official } = await sameVerify(payment, requirements("permit2"));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_permit2_invalid_spender");
  });

  test("EIP-3009 not yet valid (validAfter in the future)", async () => {
    const payment = await pay(payerA);
    payment.payload.deposit.authorization.erc3009Authorization.validAfter = String(
      Math.floor(Date.now() / 1000) + 3600,
    );
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe(
      "invalid_batch_settlement_evm_payload_authorization_valid_after",
    );
  });

  test("no erc3009Authorization and no hint", async () => {
    const payment = await pay(payerA);
    delete payment.payload.deposit.authorization.erc3009Authorization;
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe(
      "invalid_batch_settlement_evm_erc3009_authorization_required",
    );
  });

  test("Permit2 hinted, an EIP-3009 deposit sent", async () => {
    const payment = await pay(payerA);
    const { theirs: official } = await sameVerify(payment, requirements("permit2"));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_payload_type");
  });

  test("Permit2 hinted, an EIP-3009 deposit sent, and payTo differs: the channel first", async () => {
    const payment = await pay(payerA);
    const { theirs: official } = await sameVerify(payment, {
      ...requirements("permit2"),
      payTo: other(),
    });
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_receiver_mismatch");
  });

  test("Permit2 from another address than the payer", async () => {
    const payment = await pay(payerB, requirements("permit2"));
    payment.payload.deposit.authorization.permit2Authorization.from = other();
    const { theirs: official } = await sameVerify(payment, requirements("permit2"));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_permit2_invalid_signature");
  });

  test("Permit2 amount differs from the deposit", async () => {
    const payment = await pay(payerB, requirements("permit2"));
    payment.payload.deposit.authorization.permit2Authorization.permitted.amount = "1";
    const { theirs: official } = await sameVerify(payment, requirements("permit2"));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_permit2_amount_mismatch");
  });

  test("Permit2 witness names another channel", async () => {
    const payment = await pay(payerB, requirements("permit2"));
    payment.payload.deposit.authorization.permit2Authorization.witness.channelId =
      channelIdOf(payerA);
    const { theirs: official } = await sameVerify(payment, requirements("permit2"));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_channel_id_mismatch");
  });

  test("Permit2 deadline passed", async () => {
    const payment = await pay(payerB, requirements("permit2"));
    payment.payload.deposit.authorization.permit2Authorization.deadline = "1";
    const { theirs: official } = await sameVerify(payment, requirements("permit2"));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_permit2_deadline_expired");
  });

  test("Permit2 signed by another key", async () => {
    const payment = await pay(payerB, requirements("permit2"));
    const forged = await pay(payerC, requirements("permit2"));
    payment.payload.deposit.authorization.permit2Authorization.signature =
      forged.payload.deposit.authorization.permit2Authorization.signature;
    const { theirs: official } = await sameVerify(payment, requirements("permit2"));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_permit2_invalid_signature");
  });

  test("EIP-3009 without extra.name and extra.version", async () => {
    const payment = await pay(payerA);
    const accepted = requirements();
    delete accepted.extra.name;
    delete accepted.extra.version;
    const { theirs: official } = await sameVerify(payment, accepted);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_missing_eip712_domain");
    expect(await referenceCode("verify", payment, accepted)).toBe("missing_eip712_domain");
  });
});

describe("a deposit settled", () => {
  test("valid EIP-3009 deposit: same amount and channel state", async () => {
    const payment = await pay(payerA);
    firstDeposit = payment;
    const { ours: answer } = await sameSettle(payment);
    expect(answer).toMatchObject({
      success: true,
      amount: DEPOSIT.toString(),
      extra: { channelState: { balance: DEPOSIT.toString(), totalClaimed: "0" } },
    });
  });
});

describe("a deposit settled twice", () => {
  test("the settled deposit verified again", async () => {
    const { theirs: official } = await sameVerify(firstDeposit);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_deposit_simulation_failed");
  });
});

describe("vouchers (verify)", () => {
  test("valid after the deposit", async () => {
    const { theirs: official } = await sameVerify(await voucherPayment(payerA, PRICE));
    expect(official).toMatchObject({
      isValid: true,
      extra: { balance: DEPOSIT.toString(), totalClaimed: "0" },
    });
  });

  test("over the channel balance", async () => {
    const { theirs: official } = await sameVerify(await voucherPayment(payerA, DEPOSIT + 1n));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_cumulative_exceeds_balance");
  });

  test("wrong signature", async () => {
    const payment = await voucherPayment(payerA, PRICE);
    payment.payload.voucher = await voucherOf(payerD, channelIdOf(payerA), PRICE);
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_voucher_signature");
  });

  test("unknown channel (no deposit)", async () => {
    const payment = await voucherPayment(payerD, PRICE);
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_channel_not_found");
    expect(await referenceCode("verify", payment, requirements())).toBe("channel_not_found");
  });

  test("channel config mismatch (receiver)", async () => {
    const payment = await voucherPayment(payerA, 2n * PRICE);
    const { theirs: official } = await sameVerify(payment, {
      ...requirements(),
      payTo: other(),
    });
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_receiver_mismatch");
  });
});

describe("claims (settle)", () => {
  test("valid claim, signed by the facilitators' receiver authorizer", async () => {
    const { ours: answer } = await sameSettle(
      action({ type: "claim", claims: [await claimRow(payerA, 3n * PRICE)] }),
    );
    expect(answer.success).toBe(true);
  });

  test("vouchers at and below what was claimed", async () => {
    for (const amount of [3n * PRICE, 2n * PRICE]) {
      const { theirs: official } = await sameVerify(await voucherPayment(payerA, amount));
      expect(official.invalidReason).toBe("invalid_batch_settlement_evm_cumulative_below_claimed");
    }
  });

  test("a channel whose receiverAuthorizer is not ours, no signature", async () => {
    const foreign = requirements("eip3009", { receiverAuthorizer: other() });
    const channel = configOf(payerA, foreign);
    const voucher = await voucherOf(payerA, computeChannelId(channel, devnet.network), PRICE);
    const row = {
      voucher: { channel, maxClaimableAmount: PRICE.toString() },
      signature: voucher.signature,
      totalClaimed: PRICE.toString(),
    };
    const payment = action({ type: "claim", claims: [row] });
    const { theirs: official } = await sameSettle(payment);
    expect(official.errorReason).toBe("invalid_batch_settlement_evm_authorizer_address_mismatch");
    expect(await referenceCode("settle", payment, requirements())).toBe(
      "receiver_authorizer_unavailable",
    );
  });

  test("a claim over its voucher: the simulation fails", async () => {
    const row = { ...(await claimRow(payerA, 4n * PRICE)), totalClaimed: (5n * PRICE).toString() };
    const { theirs: official } = await sameSettle(action({ type: "claim", claims: [row] }));
    expect(official.errorReason).toBe("invalid_batch_settlement_evm_claim_simulation_failed");
  });
});

describe("settle (sweep)", () => {
  const sweep = () =>
    action({ type: "settle", receiver: devnet.payee.address, token: devnet.token.address });

  test("something to settle: the same amount", async () => {
    const { ours: answer } = await sameSettle(sweep());
    expect(answer).toMatchObject({ success: true, amount: (3n * PRICE).toString() });
  });

  test("nothing to settle", async () => {
    const { theirs: official } = await sameSettle(sweep());
    expect(official.errorReason).toBe("invalid_batch_settlement_evm_nothing_to_settle");
    expect(await referenceCode("settle", sweep(), requirements())).toBe("nothing_to_settle");
  });
});

describe("refunds", () => {
  test("refund verify on a valid channel", async () => {
    const { theirs: official } = await sameVerify(
      await voucherPayment(payerA, 3n * PRICE, "refund"),
    );
    expect(official).toMatchObject({
      isValid: true,
      extra: { balance: DEPOSIT.toString(), totalClaimed: (3n * PRICE).toString() },
    });
  });

  test("valid refund (amount, refundNonce 0, no claims)", async () => {
    const rest = DEPOSIT - 3n * PRICE;
    const { ours: answer } = await sameSettle(
      action({
        type: "refund",
        channelConfig: configOf(payerA),
        voucher: await voucherOf(payerA, channelIdOf(payerA), 3n * PRICE),
        amount: rest.toString(),
        refundNonce: "0",
        claims: [],
      }),
    );
    expect(answer).toMatchObject({
      success: true,
      amount: rest.toString(),
      extra: { channelState: { balance: (3n * PRICE).toString(), refundNonce: "1" } },
    });
  });

  test("refund on an empty channel", async () => {
    const { theirs: official } = await sameSettle(
      action({
        type: "refund",
        channelConfig: configOf(payerD),
        voucher: await voucherOf(payerD, channelIdOf(payerD), PRICE),
        amount: PRICE.toString(),
        refundNonce: "0",
        claims: [],
      }),
    );
    expect(official.errorReason).toBe("invalid_batch_settlement_evm_refund_no_balance");
  });
});

describe("refund verify", () => {
  test("a refund's voucher below what was claimed", async () => {
    const { theirs: official } = await sameVerify(
      await voucherPayment(payerA, 2n * PRICE, "refund"),
    );
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_cumulative_below_claimed");
  });

  test("a refund's voucher on an unknown channel", async () => {
    const { theirs: official } = await sameVerify(await voucherPayment(payerD, PRICE, "refund"));
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_channel_not_found");
  });
});

describe("a channel funded through another facilitator, with a withdrawal under way", () => {
  let payerE: DevAccount;
  test("a voucher after a deposit we verified and the official facilitator settled", async () => {
    payerE = devnet.payers[4] as DevAccount;
    const deposit = await pay(payerE);
    expect((await handleVerify(ours, x402Body(deposit, requirements()))).body.isValid).toBe(true);
    expect(await theirSettle(deposit, requirements())).toMatchObject({ success: true });
    const { theirs: official } = await sameVerify(await voucherPayment(payerE, PRICE));
    expect(official.isValid).toBe(true);
  });

  test("a voucher while the payer's timed withdrawal is pending", async () => {
    const { publicClient, wallet } = clientsOf(devnet, payerE);
    const started = await wallet.writeContract({
      address: devnet.batchSettlement.settlement,
      abi: x402BatchSettlementAbi,
      functionName: "initiateWithdraw",
      args: [configOf(payerE), PRICE],
    });
    await publicClient.waitForTransactionReceipt({ hash: started });
    // Deliberate (not a parity case): our verify answers from the channel state it read less
    // than 30 s ago (book.ts), so a withdrawal started since shows at the next read. It cannot
    // end sooner than 15 minutes after it started, so the seller still has that long to claim.
    const payment = await voucherPayment(payerE, 2n * PRICE);
    const official = await theirVerify(payment, requirements());
    expect(official).toMatchObject({ isValid: true });
    expect((official as Json).extra.withdrawRequestedAt).toBeGreaterThan(0);
    const answer = (await handleVerify(ours, x402Body(payment, requirements()))).body as Json;
    expect(answer).toMatchObject({ isValid: true, extra: { withdrawRequestedAt: 0 } });
  });

  test("a refund with a last claim (multicall) while the withdrawal is pending", async () => {
    const row = await claimRow(payerE, 2n * PRICE);
    const { ours: answer } = await sameSettle(
      action({
        type: "refund",
        channelConfig: configOf(payerE),
        voucher: {
          channelId: channelIdOf(payerE),
          maxClaimableAmount: row.totalClaimed,
          signature: row.signature,
        },
        amount: DEPOSIT.toString(),
        refundNonce: "0",
        claims: [row],
      }),
    );
    expect(answer).toMatchObject({ success: true, amount: (DEPOSIT - 2n * PRICE).toString() });
  });
});

describe("payload shapes", () => {
  test("a voucher without channelConfig", async () => {
    const payment = await voucherPayment(payerA, 4n * PRICE);
    delete payment.payload.channelConfig;
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_payload_type");
  });

  test("a refund (verify) whose voucher has no signature", async () => {
    const payment = await voucherPayment(payerA, 4n * PRICE, "refund");
    delete payment.payload.voucher.signature;
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_payload_type");
  });

  test("a deposit without deposit.authorization", async () => {
    const payment = await pay(payerD);
    delete payment.payload.deposit.authorization;
    const { theirs: official } = await sameVerify(payment);
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_payload_type");
  });

  test("a settle without token", async () => {
    const { theirs: official } = await sameSettle(
      action({ type: "settle", receiver: devnet.payee.address }),
    );
    expect(official.errorReason).toBe("invalid_batch_settlement_evm_payload_type");
  });
});

describe("payload types", () => {
  test("a claim sent to verify", async () => {
    const { theirs: official } = await sameVerify(
      action({ type: "claim", claims: [await claimRow(payerA, PRICE)] }),
    );
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_payload_type");
  });

  test("a settle sent to verify", async () => {
    const { theirs: official } = await sameVerify(
      action({ type: "settle", receiver: devnet.payee.address, token: devnet.token.address }),
    );
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_payload_type");
  });

  test("a refund in its verify form (no amount, refundNonce, claims) sent to settle", async () => {
    const { theirs: official } = await sameSettle(
      await voucherPayment(payerA, 3n * PRICE, "refund"),
    );
    expect(official.errorReason).toBe("invalid_batch_settlement_evm_payload_type");
  });

  const bogus = () => action({ type: "bogus" });

  test("unknown type, verify", async () => {
    const { theirs: official } = await sameVerify(bogus());
    expect(official.invalidReason).toBe("invalid_batch_settlement_evm_payload_type");
    expect(await referenceCode("verify", bogus(), requirements())).toBe("invalid_request");
  });

  test("unknown type, settle", async () => {
    const { theirs: official } = await sameSettle(bogus());
    expect(official.errorReason).toBe("invalid_batch_settlement_evm_payload_type");
  });

  test("a voucher sent to settle", async () => {
    const { theirs: official } = await sameSettle(await voucherPayment(payerA, 4n * PRICE));
    expect(official.errorReason).toBe("invalid_batch_settlement_evm_payload_type");
  });
});

/**
 * Not parity cases: where we answer otherwise on purpose (or until a file we do not own here
 * changes). Both answers are pinned, so a change on either side shows.
 */
describe("differences", () => {
  test("deliberate: a voucher lower than one already verified for the channel is stale", async () => {
    // Payer B's Permit2 deposit, settled by both (a parity case), then two vouchers.
    const payment = await pay(payerB, requirements("permit2"));
    expect(payment.payload.type).toBe("deposit");
    await sameSettle(payment, requirements("permit2"));
    await sameVerify(await voucherPayment(payerB, 2n * PRICE));
    const lower = await voucherPayment(payerB, PRICE);
    expect(await theirVerify(lower, requirements())).toMatchObject({ isValid: true });
    expect((await handleVerify(ours, x402Body(lower, requirements()))).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_batch_settlement_evm_cumulative_amount_mismatch",
    });
  });

  test("deliberate: a malformed amount is invalid_payload; the official facilitator throws", async () => {
    const payment = await voucherPayment(payerB, 3n * PRICE);
    payment.payload.voucher.maxClaimableAmount = "lots";
    expect(await theirVerify(payment, requirements())).toHaveProperty("threw");
    expect((await handleVerify(ours, x402Body(payment, requirements()))).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_payload",
    });
  });

  test("a settled deposit settled again: the exact pipeline's nonce_already_used (index.ts)", async () => {
    const snapshot = await anvil().snapshot();
    const official = await theirSettle(firstDeposit, requirements());
    await anvil().revert({ id: snapshot });
    // The official facilitator refuses it too, for whichever of the channel's checks comes first.
    expect(official).toMatchObject({ success: false });
    expect((official as Json).errorReason).toMatch(/^invalid_batch_settlement_evm_/);
    const body = x402Body(firstDeposit, requirements());
    expect((await handleSettle(ours, body)).body).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_nonce_already_used",
    });
    expect(await referenceCode("settle", firstDeposit, requirements())).toBe("nonce_already_used");
  });

  test("a claim without claims: invalid_payload from claim.ts, payload_type officially", async () => {
    const payment = action({ type: "claim" });
    expect(await theirSettle(payment, requirements())).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_payload_type",
    });
    expect((await handleSettle(ours, x402Body(payment, requirements()))).body).toMatchObject({
      success: false,
      errorReason: "invalid_payload",
    });
  });
});
