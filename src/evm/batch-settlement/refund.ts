/**
 * A cooperative refund: what the payer deposited and nobody claimed, returned by
 * `refundWithSignature` with the receiver authorizer's signature (given, or ours). Claims that
 * ride along go first, in the same transaction (`multicall`).
 */
import { encodeFunctionData, type Hex } from "viem";
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import { describeIssue } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { ourAuthorizerFor } from "./authorizer.js";
import { type ChannelState, channelIdOf, readChannel, stateExtra } from "./channel.js";
import { claimCall, claimSignature, learnClaims } from "./claim-call.js";
import { REFUND_TYPES, SETTLEMENT_ABI, SETTLEMENT_ADDRESS, settlementDomain } from "./constants.js";
import { officialShapeFailure, type RefundPayload, refundSchema } from "./payload.js";
import { rejected } from "./reasons.js";
import { sendAction } from "./send.js";
import { bookOf } from "./voucher.js";

/** What can be refunded: the request, capped at what is neither claimed nor to be claimed here. */
function refundable(payload: RefundPayload, state: ChannelState, channelId: Hex, chainId: number) {
  const claimedAfter = payload.claims.reduce((most, claim) => {
    const same = channelIdOf(claim.voucher.channel, chainId) === channelId;
    return same && claim.totalClaimed > most ? claim.totalClaimed : most;
  }, state.totalClaimed);
  if (claimedAfter > state.balance || payload.amount === 0n) return undefined;
  const left = state.balance - claimedAfter;
  if (payload.amount > left) return left;
  return payload.amount;
}

async function refundSignature(ctx: EvmContext, payload: RefundPayload, channelId: Hex) {
  if (payload.refundAuthorizerSignature)
    return { ok: true as const, signature: payload.refundAuthorizerSignature };
  const ours = ourAuthorizerFor(ctx, "refund", [payload.channelConfig.receiverAuthorizer]);
  if (!ours.ok) return ours;
  const signature = await ours.authorizer.signTypedData({
    domain: settlementDomain(ctx.chainId),
    types: REFUND_TYPES,
    primaryType: "Refund",
    message: { channelId, nonce: payload.refundNonce, amount: payload.amount },
  });
  return { ok: true as const, signature };
}

export async function settleRefund(
  ctx: EvmContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const wrongShape = officialShapeFailure("settle-refund", request);
  if (wrongShape) return { ok: false, failure: wrongShape };
  const parsed = refundSchema.safeParse(request.payload);
  if (!parsed.success) {
    const prefix = `${request.paths.payload}.payload`;
    return { ok: false, failure: invalidField(describeIssue(parsed.error, prefix), prefix) };
  }
  const payload = parsed.data;
  const payer = payload.channelConfig.payer;
  const channelId = channelIdOf(payload.channelConfig, ctx.chainId);
  let before: ChannelState;
  try {
    before = await readChannel(ctx, channelId);
  } catch (error) {
    return { ok: false, payer, failure: chainFailure(error, "reading the channel") };
  }
  if (refundable(payload, before, channelId, ctx.chainId) === 0n) {
    return {
      ok: false,
      payer,
      failure: rejected(
        "nothing_to_settle",
        "refund_no_balance",
        `nothing is left to refund in channel ${channelId}`,
      ),
    };
  }
  const refundSigned = await refundSignature(ctx, payload, channelId);
  if (!refundSigned.ok) return { ok: false, payer, failure: refundSigned.failure };
  const refundData = encodeFunctionData({
    abi: SETTLEMENT_ABI,
    functionName: "refundWithSignature",
    args: [payload.channelConfig, payload.amount, payload.refundNonce, refundSigned.signature],
  });
  let data = refundData;
  if (payload.claims.length > 0) {
    const claimSigned = await claimSignature(ctx, payload.claims, payload.claimAuthorizerSignature);
    if (!claimSigned.ok) return { ok: false, payer, failure: claimSigned.failure };
    const claim = claimCall(ctx, payload.claims, claimSigned.signature);
    data = encodeFunctionData({
      abi: SETTLEMENT_ABI,
      functionName: "multicall",
      args: [[claim.data, refundData]],
    });
  }
  const sent = await sendAction(
    ctx,
    {
      // The contract takes each refund nonce of a channel once.
      key: `batch-refund:${ctx.chainId}:${channelId}:${payload.refundNonce}`,
      call: { to: SETTLEMENT_ADDRESS, data },
      gas: { use: "batchRefund", rows: payload.claims.length, asset: payload.channelConfig.token },
      payer,
      reverts: (detail) =>
        rejected(
          "simulation_failed",
          "refund_simulation_failed",
          `the refund would revert${detail ? `: ${detail}` : ""}`,
        ),
    },
    waitUntil,
  );
  if (!sent.ok) return sent.result;
  if (payload.claims.length > 0) learnClaims(ctx, payload.claims);
  const after = await readChannel(ctx, channelId).catch(() => undefined);
  if (after) bookOf(ctx).remember(channelId, after);
  else bookOf(ctx).forget(channelId);
  const amount = after && before.balance > after.balance ? before.balance - after.balance : 0n;
  return {
    ok: true,
    payer,
    transactionHash: sent.hash,
    amount: amount.toString(),
    ...(after ? { extra: { channelState: stateExtra(channelId, after) } } : {}),
  };
}
