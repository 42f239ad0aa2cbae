/**
 * A claim: the receiver side records what vouchers entitle it to, for one or many channels, in one
 * `claimWithSignature`. The receiver authorizer's signature comes with it, or, for sellers that
 * leave it to us, is ours (when our authorizer key is the channels' receiverAuthorizer).
 */
import { encodeFunctionData, type Hex, hashTypedData, isAddressEqual } from "viem";
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import { describeIssue } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { channelIdOf } from "./channel.js";
import {
  CLAIM_BATCH_TYPES,
  SETTLEMENT_ABI,
  SETTLEMENT_ADDRESS,
  settlementDomain,
} from "./constants.js";
import { claimSchema, type VoucherClaim } from "./payload.js";
import { rejected } from "./reasons.js";
import { sendAction } from "./send.js";
import { bookOf } from "./voucher.js";

/** The rows as the contract takes them. */
export const claimArgs = (claims: readonly VoucherClaim[]) =>
  claims.map((c) => ({
    voucher: { channel: c.voucher.channel, maxClaimableAmount: c.voucher.maxClaimableAmount },
    signature: c.signature,
    totalClaimed: c.totalClaimed,
  }));

function claimBatchMessage(ctx: EvmContext, claims: readonly VoucherClaim[]) {
  return {
    domain: settlementDomain(ctx.chainId),
    types: CLAIM_BATCH_TYPES,
    primaryType: "ClaimBatch" as const,
    message: {
      claims: claims.map((c) => ({
        channelId: channelIdOf(c.voucher.channel, ctx.chainId),
        maxClaimableAmount: c.voucher.maxClaimableAmount,
        totalClaimed: c.totalClaimed,
      })),
    },
  };
}

/** The receiver authorizer's signature over the rows: the one given, or ours. */
export async function claimSignature(
  ctx: EvmContext,
  claims: readonly VoucherClaim[],
  given: Hex | undefined,
) {
  if (given) return { ok: true as const, signature: given };
  const authorizer = ctx.receiverAuthorizer;
  if (!authorizer) {
    return {
      ok: false as const,
      failure: rejected(
        "receiver_authorizer_unavailable",
        "authorizer_not_configured",
        "the claim carries no claimAuthorizerSignature, and this facilitator holds no receiver authorizer key to sign it",
      ),
    };
  }
  const foreign = claims.find(
    (c) => !isAddressEqual(c.voucher.channel.receiverAuthorizer, authorizer.address),
  );
  if (foreign) {
    return {
      ok: false as const,
      failure: rejected(
        "receiver_authorizer_unavailable",
        "authorizer_address_mismatch",
        `a claimed channel's receiverAuthorizer is ${foreign.voucher.channel.receiverAuthorizer}, not this facilitator's ${authorizer.address}: sign the claim yourself`,
      ),
    };
  }
  return {
    ok: true as const,
    signature: await authorizer.signTypedData(claimBatchMessage(ctx, claims)),
  };
}

/** What a claim transaction does: its call, and the name the journal keeps it under. */
export function claimCall(ctx: EvmContext, claims: readonly VoucherClaim[], signature: Hex) {
  return {
    key: `batch-claim:${ctx.chainId}:${hashTypedData(claimBatchMessage(ctx, claims))}`,
    data: encodeFunctionData({
      abi: SETTLEMENT_ABI,
      functionName: "claimWithSignature",
      args: [claimArgs(claims), signature],
    }),
  };
}

/** Our own claim moved these channels' claimed totals: the book learns them without a read. */
export function learnClaims(ctx: EvmContext, claims: readonly VoucherClaim[]) {
  const book = bookOf(ctx);
  for (const c of claims) book.claimed(channelIdOf(c.voucher.channel, ctx.chainId), c.totalClaimed);
}

export async function settleClaim(
  ctx: EvmContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const parsed = claimSchema.safeParse(request.payload);
  if (!parsed.success) {
    const prefix = `${request.paths.payload}.payload`;
    return { ok: false, failure: invalidField(describeIssue(parsed.error, prefix), prefix) };
  }
  const { claims, claimAuthorizerSignature } = parsed.data;
  const signed = await claimSignature(ctx, claims, claimAuthorizerSignature);
  if (!signed.ok) return { ok: false, failure: signed.failure };
  const { key, data } = claimCall(ctx, claims, signed.signature);
  const sent = await sendAction(
    ctx,
    {
      key,
      call: { to: SETTLEMENT_ADDRESS, data },
      gas: {
        use: "batchClaim",
        rows: claims.length,
        asset: claims[0]?.voucher.channel.token ?? SETTLEMENT_ADDRESS,
      },
      reverts: (detail) =>
        rejected(
          "simulation_failed",
          "claim_simulation_failed",
          `the claim would revert${detail ? `: ${detail}` : ""}`,
        ),
    },
    waitUntil,
  );
  if (!sent.ok) return sent.result;
  learnClaims(ctx, claims);
  return { ok: true, payer: "", transactionHash: sent.hash };
}
