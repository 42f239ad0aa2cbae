/** A channel's refund and a receiver's settle: our transactions, sent when their owner asks. */
import { type Hex, isAddressEqual, parseEventLogs } from "viem";
import { type Failure, failed } from "../../protocol/errors.js";
import { actsFor, type PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { sendAction } from "../send-action.js";
import {
  type ChannelState,
  channelIdOf,
  channelMismatch,
  readChannel,
  stateExtra,
} from "./channel.js";
import { claimCall, learnClaims, ourAuthorizerFor } from "./claim-call.js";
import {
  REFUND_TYPES,
  SETTLEMENT_ABI,
  SETTLEMENT_ADDRESS,
  settlementCall,
  settlementDomain,
} from "./constants.js";
import { parsePayload, type RefundPayload, refundSchema, sweepSchema } from "./payload.js";
import { rejected, wouldRevert } from "./reasons.js";
import { BATCH_GAS } from "./settings.js";
import { bookOf, channelChanged, checkVoucherSignature, voucherAgainst } from "./voucher.js";

/** How long a refund we send may take to land, as far as other replicas' channel books go. */
const REFUND_LANDS_WITHIN_MS = 60_000;

/** The channel's claimed total once the claims that ride along are applied. */
function claimedAfter(payload: RefundPayload, state: ChannelState, id: Hex, chainId: number) {
  return payload.claims.reduce((most, claim) => {
    const same = channelIdOf(claim.voucher.channel, chainId) === id;
    return same && claim.totalClaimed > most ? claim.totalClaimed : most;
  }, state.totalClaimed);
}

/** The receiver authorizer's refund signature: given, or ours, only for the channel's seller. */
async function refundSignature(
  ctx: EvmContext,
  request: PaymentRequest,
  payload: RefundPayload,
  channelId: Hex,
) {
  if (payload.refundAuthorizerSignature)
    return { ok: true as const, signature: payload.refundAuthorizerSignature };
  const ours = ourAuthorizerFor(ctx, "refund", [payload.channelConfig.receiverAuthorizer]);
  if (!ours.ok) return ours;
  const receiver = payload.channelConfig.receiver;
  if (!actsFor(request.caller, receiver)) {
    const who = request.caller
      ? `the API key ${request.caller.name} does not name it among its receivers`
      : "this request is anonymous";
    return failed(
      "refund_not_authorized",
      `the refund carries no refundAuthorizerSignature, so this facilitator's receiver authorizer would sign it, and it does so only when the channel's seller (receiver ${receiver}) asks; ${who}: send it with an API key bound to that receiver (--api-keys-file), or sign the refund with the channel's receiver authorizer`,
    );
  }
  const signature = await ours.authorizer.signTypedData({
    domain: settlementDomain(ctx.chainId),
    types: REFUND_TYPES,
    primaryType: "Refund",
    message: { channelId, nonce: payload.refundNonce, amount: payload.amount },
  });
  return { ok: true as const, signature };
}

/** A cooperative refund by refundWithSignature; claims riding along go first, in one multicall. */
export async function settleRefund(
  ctx: EvmContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const parsed = parsePayload(request, refundSchema, "settle-refund");
  if (!parsed.ok) return parsed;
  const payload = parsed.value;
  const config = payload.channelConfig;
  const payer = config.payer;
  const refuse = (f: Failure): SettleResult => ({ ok: false, payer, failure: f });
  // The contract reverts a refund of nothing (ZeroRefund).
  if (payload.amount === 0n) {
    const why = `${request.paths.payload}.payload.amount is 0: a refund of nothing is not sent`;
    return refuse(rejected("refund_amount_invalid", why));
  }
  const channelId = channelIdOf(config, ctx.chainId);
  // The manager's requirements name only payTo and asset.
  const mismatch = channelMismatch(payload, request.requirements, ctx.chainId, true);
  if (mismatch) return refuse(mismatch);
  // Who may have our key sign is decided before anything is read.
  const refundSigned = await refundSignature(ctx, request, payload, channelId);
  if (!refundSigned.ok) return refuse(refundSigned.failure);
  let before: ChannelState;
  try {
    before = await readChannel(ctx, channelId);
  } catch (error) {
    return refuse(chainFailure(error, "reading the channel"));
  }
  if (claimedAfter(payload, before, channelId, ctx.chainId) === before.balance) {
    return refuse(
      rejected("refund_no_balance", `nothing is left to refund in channel ${channelId}`),
    );
  }
  // The voucher is held to what verify holds it to (the official facilitator does not look).
  const voucherWrong =
    (await checkVoucherSignature(ctx, config, payload.voucher)) ??
    voucherAgainst(before, channelId, payload.voucher.maxClaimableAmount, "refund");
  if (voucherWrong) return refuse(voucherWrong);
  const args = [config, payload.amount, payload.refundNonce, refundSigned.signature] as const;
  let call = settlementCall("refundWithSignature", args);
  if (payload.claims.length > 0) {
    const claim = await claimCall(ctx, payload.claims, payload.claimAuthorizerSignature);
    if (!claim.ok) return refuse(claim.failure);
    call = settlementCall("multicall", [[claim.data, call.data]]);
  }
  // Until it lands the balance may fall: every replica reads the channel before a voucher.
  await channelChanged(ctx, channelId, Date.now() + REFUND_LANDS_WITHIN_MS);
  const sent = await sendAction(
    ctx,
    {
      // The contract takes each refund nonce of a channel once.
      key: `batch-refund:${ctx.chainId}:${channelId}:${payload.refundNonce}`,
      call,
      gas: {
        use: BATCH_GAS.refund,
        rows: { count: payload.claims.length, each: BATCH_GAS.claimRow },
        asset: config.token,
      },
      payer,
      name: "refund",
      payment: request,
      chargeTo: [{ payer, asset: config.token }],
      reverts: (detail) => wouldRevert("refund", detail),
    },
    waitUntil,
  );
  if (!sent.ok) return sent.result;
  learnClaims(ctx, payload.claims);
  await channelChanged(ctx, channelId, Date.now());
  const after = await readChannel(ctx, channelId).catch(() => undefined);
  if (after) bookOf(ctx).remember(channelId, after);
  const amount = after && before.balance > after.balance ? before.balance - after.balance : 0n;
  return {
    ok: true,
    payer,
    transactionHash: sent.hash,
    amount: amount.toString(),
    ...(after ? { extra: { channelState: stateExtra(channelId, after) } } : {}),
  };
}

/** A settle: what was claimed for a receiver in one token, swept to it by settle(receiver, token). */
export async function settleSweep(
  ctx: EvmContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const parsed = parsePayload(request, sweepSchema, "settle");
  if (!parsed.ok) return parsed;
  const { receiver, token } = parsed.value;
  let claimed: bigint;
  let settled: bigint;
  try {
    [claimed, settled] = await ctx.client.readContract({
      address: SETTLEMENT_ADDRESS,
      abi: SETTLEMENT_ABI,
      functionName: "receivers",
      args: [receiver, token],
    });
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "reading what the receiver has claimed") };
  }
  if (claimed <= settled) {
    return failed(
      rejected(
        "nothing_to_settle",
        `nothing is claimed and unsettled for ${receiver} in ${token} (claimed ${claimed}, settled ${settled})`,
      ),
    );
  }
  const sent = await sendAction(
    ctx,
    {
      key: `batch-settle:${ctx.chainId}:${receiver}:${token}:${claimed}`.toLowerCase(),
      call: settlementCall("settle", [receiver, token]),
      gas: { use: BATCH_GAS.settle, asset: token },
      // Its receiver asked for it: a settle that reverts is charged as a payer's would be.
      name: "settle",
      payment: request,
      chargeTo: [{ payer: receiver, asset: token }],
      reverts: (detail) => wouldRevert("settle", detail),
    },
    waitUntil,
  );
  if (!sent.ok) return sent.result;
  // What moved, from the receipt's Settled event; before it is mined, what was owed.
  const moved = sent.receipt
    ? parseEventLogs({ abi: SETTLEMENT_ABI, eventName: "Settled", logs: sent.receipt.logs }).find(
        (log) =>
          isAddressEqual(log.address, SETTLEMENT_ADDRESS) &&
          isAddressEqual(log.args.receiver, receiver) &&
          isAddressEqual(log.args.token, token),
      )?.args.amount
    : claimed - settled;
  return { ok: true, payer: "", transactionHash: sent.hash, amount: (moved ?? 0n).toString() };
}
