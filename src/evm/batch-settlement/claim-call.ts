/** A claim's call: its rows, which of them move, the receiver authorizer's signature, its key. */
import { type Address, type Hex, hashTypedData, isAddressEqual, type LocalAccount } from "viem";
import { type Failure, failed } from "../../protocol/errors.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { channelIdOf, readViews } from "./channel.js";
import { CLAIM_BATCH_TYPES, settlementCall, settlementDomain } from "./constants.js";
import type { VoucherClaim } from "./payload.js";
import { type Reason, rejected } from "./reasons.js";
import { BATCH_OWN } from "./settings.js";
import { bookOf } from "./voucher.js";

/** Our receiver authorizer key, when configured: it signs only for channels that name it. */
export function ourAuthorizerFor(
  ctx: EvmContext,
  what: "claim" | "refund",
  named: readonly Address[],
): { ok: true; authorizer: LocalAccount } | { ok: false; failure: Failure } {
  const authorizer = ctx.own(BATCH_OWN).receiverAuthorizer;
  const refuse = (reason: Reason, message: string) => failed(rejected(reason, message));
  if (!authorizer) {
    return refuse(
      "authorizer_not_configured",
      `the ${what} carries no ${what}AuthorizerSignature, and this facilitator holds no receiver authorizer key to sign it`,
    );
  }
  const foreign = named.find((address) => !isAddressEqual(address, authorizer.address));
  if (foreign) {
    const whose = what === "claim" ? "a claimed channel's" : "the channel's";
    return refuse(
      "authorizer_address_mismatch",
      `${whose} receiverAuthorizer is ${foreign}, not this facilitator's ${authorizer.address}: sign the ${what} yourself`,
    );
  }
  return { ok: true, authorizer };
}

/** The rows as the contract takes them. */
const claimArgs = (claims: readonly VoucherClaim[]) =>
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

/** The name the journal keeps a claim of these rows under. */
export const claimKey = (ctx: EvmContext, claims: readonly VoucherClaim[]) =>
  `batch-claim:${ctx.chainId}:${hashTypedData(claimBatchMessage(ctx, claims))}`;

/** A claim transaction: its call, signed by the receiver authorizer (given, or ours), its key. */
export async function claimCall(
  ctx: EvmContext,
  claims: readonly VoucherClaim[],
  given: Hex | undefined,
): Promise<{ ok: true; key: string; data: Hex } | { ok: false; failure: Failure }> {
  let signature = given;
  if (!signature) {
    const named = claims.map((c) => c.voucher.channel.receiverAuthorizer);
    const ours = ourAuthorizerFor(ctx, "claim", named);
    if (!ours.ok) return ours;
    signature = await ours.authorizer.signTypedData(claimBatchMessage(ctx, claims));
  }
  const { data } = settlementCall("claimWithSignature", [claimArgs(claims), signature]);
  return { ok: true, key: claimKey(ctx, claims), data };
}

/** Our own claim moved these channels' claimed totals: the book learns them without a read. */
export function learnClaims(ctx: EvmContext, claims: readonly VoucherClaim[]) {
  const book = bookOf(ctx);
  for (const c of claims) book.claimed(channelIdOf(c.voucher.channel, ctx.chainId), c.totalClaimed);
}

/** Channels read in one call (readViews). */
const READ_CHUNK = 200;

/** Each distinct channel's claimed total, by id, in as few calls as there are chunks. */
async function claimedTotals(ctx: EvmContext, ids: readonly Hex[]): Promise<Map<Hex, bigint>> {
  const totals = new Map<Hex, bigint>();
  for (let start = 0; start < ids.length; start += READ_CHUNK) {
    const chunk = ids.slice(start, start + READ_CHUNK);
    const views = chunk.map((id) => ["channels", id] as const);
    const results = await readViews(ctx, views);
    for (const [i, id] of chunk.entries()) {
      totals.set(id, (results[i] as readonly [bigint, bigint])[1]);
    }
  }
  return totals;
}

/** The rows that raise their channel's claimed total (any other is a no-op we would pay for). */
export async function rowsThatMove(
  ctx: EvmContext,
  rows: readonly VoucherClaim[],
): Promise<{ ok: true; rows: VoucherClaim[] } | { ok: false; failure: Failure }> {
  const ids = rows.map((row) => channelIdOf(row.voucher.channel, ctx.chainId));
  let totals: Map<Hex, bigint>;
  try {
    totals = await claimedTotals(ctx, [...new Set(ids)]);
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "reading the claimed channels") };
  }
  const moving = rows.filter((row, i) => row.totalClaimed > (totals.get(ids[i] as Hex) ?? 0n));
  if (moving.length > 0) return { ok: true, rows: moving };
  const first = rows[0];
  const already = totals.get(ids[0] as Hex) ?? 0n;
  return failed(
    rejected(
      "nothing_to_settle",
      rows.length === 1 && first
        ? `nothing to claim: channel ${ids[0]} has ${already} claimed already${already === 0n ? " (it was never opened, or nothing was claimed yet)" : ""}, and this claim's total is ${first.totalClaimed}`
        : `nothing to claim: none of the ${rows.length} rows raises its channel's claimed total`,
    ),
  );
}
