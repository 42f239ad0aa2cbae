/**
 * A claim's call: its rows as the contract takes them, the receiver authorizer's signature over
 * them (the one given, or ours when our key is the channels' receiverAuthorizer) and the name the
 * journal keeps it under.
 */
import { encodeFunctionData, type Hex, hashTypedData } from "viem";
import type { EvmContext } from "../context.js";
import { ourAuthorizerFor } from "./authorizer.js";
import { channelIdOf } from "./channel.js";
import { CLAIM_BATCH_TYPES, SETTLEMENT_ABI, settlementDomain } from "./constants.js";
import type { VoucherClaim } from "./payload.js";
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
  const ours = ourAuthorizerFor(
    ctx,
    "claim",
    claims.map((c) => c.voucher.channel.receiverAuthorizer),
  );
  if (!ours.ok) return ours;
  return {
    ok: true as const,
    signature: await ours.authorizer.signTypedData(claimBatchMessage(ctx, claims)),
  };
}

/** The name the journal keeps a claim of these rows under. */
export const claimKey = (ctx: EvmContext, claims: readonly VoucherClaim[]) =>
  `batch-claim:${ctx.chainId}:${hashTypedData(claimBatchMessage(ctx, claims))}`;

/** What a claim transaction does: its call, and the name the journal keeps it under. */
export function claimCall(ctx: EvmContext, claims: readonly VoucherClaim[], signature: Hex) {
  return {
    key: claimKey(ctx, claims),
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
