/**
 * Verify of a voucher (and of a refund request's voucher): the payer's signature over the
 * cumulative amount, and that amount against the channel's balance and what was claimed. When
 * the channel's state is known (book.ts) and the payer authorizes with a key, nothing is read.
 */
import { type Hex, isAddressEqual, zeroAddress } from "viem";
import type { Failure } from "../../protocol/errors.js";
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import type { VerifyResult } from "../../protocol/results.js";
import { describeIssue } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { checkSignature, recoversTo } from "../exact/signature.js";
import { ChannelBook } from "./book.js";
import { type ChannelState, channelMismatch, readChannel, stateExtra } from "./channel.js";
import { voucherDigest } from "./digests.js";
import {
  type ChannelConfig,
  officialShapeFailure,
  type VoucherFields,
  voucherSchema,
} from "./payload.js";
import { rejected } from "./reasons.js";

/** This facilitator's channel book (one per EVM family). */
export const bookOf = (ctx: EvmContext) =>
  ctx.kept("batch-settlement:channels", () => new ChannelBook());

/** Whether the channel's payer (or its authorizer key) signed this voucher. */
export async function checkVoucherSignature(
  ctx: EvmContext,
  config: ChannelConfig,
  voucher: VoucherFields,
): Promise<Failure | undefined> {
  const digest = voucherDigest(ctx.chainId, voucher.channelId as Hex, voucher.maxClaimableAmount);
  const refuse = (why: string) =>
    rejected("invalid_signature", "voucher_signature", `the voucher's signature ${why}`);
  // A payer authorizer key signs plainly (the contract checks ECDSA); without one, the payer
  // itself signs, and a contract wallet answers for itself (EIP-1271).
  const signed = isAddressEqual(config.payerAuthorizer, zeroAddress)
    ? await checkSignature(
        ctx,
        config.payer,
        digest,
        voucher.signature,
        ctx.client.getCode({ address: config.payer }),
      )
    : await recoversTo(ctx, config.payerAuthorizer, digest, voucher.signature);
  if (signed.ok) return undefined;
  if (signed.failure.code === "chain_unavailable") return signed.failure;
  return refuse(signed.failure.message.replace(/^the signature /, ""));
}

/**
 * The channel's state: from the book while fresh, else read (and remembered). `fromBook` says
 * which: a state from the book only ever accepts; a refusal is decided on a read.
 */
export async function channelState(
  ctx: EvmContext,
  channelId: Hex,
  options: { readonly reread?: boolean } = {},
): Promise<{ ok: true; state: ChannelState; fromBook: boolean } | { ok: false; failure: Failure }> {
  const book = bookOf(ctx);
  const known = options.reread ? undefined : book.fresh(channelId);
  if (known) return { ok: true, state: known.state, fromBook: true };
  try {
    const state = await readChannel(ctx, channelId);
    book.remember(channelId, state);
    return { ok: true, state, fromBook: false };
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "reading the channel") };
  }
}

/**
 * Why a voucher for `amount` cumulative does not fit the channel's state, if it does not: no
 * deposit, over the balance, or not above what was claimed (a refund's may equal it: it adds
 * nothing, and asks for nothing).
 */
export function voucherAgainst(
  state: ChannelState,
  channelId: Hex,
  amount: bigint,
  type: "voucher" | "refund",
): Failure | undefined {
  if (state.balance === 0n) {
    return rejected(
      "channel_not_found",
      "channel_not_found",
      `channel ${channelId} holds no deposit`,
    );
  }
  if (amount > state.balance) {
    return rejected(
      "voucher_exceeds_balance",
      "cumulative_exceeds_balance",
      `the voucher is for ${amount} cumulative, over the channel's balance of ${state.balance}`,
    );
  }
  const belowClaimed =
    type === "refund" ? amount < state.totalClaimed : amount <= state.totalClaimed;
  if (belowClaimed) {
    return rejected(
      "voucher_already_claimed",
      "cumulative_below_claimed",
      `the voucher is for ${amount} cumulative, and ${state.totalClaimed} of the channel is already claimed`,
    );
  }
  return undefined;
}

export async function verifyVoucher(
  ctx: EvmContext,
  request: PaymentRequest,
): Promise<VerifyResult> {
  const kind = request.payload.type === "refund" ? "refund" : "voucher";
  const wrongShape = officialShapeFailure(kind, request);
  if (wrongShape) return { ok: false, failure: wrongShape };
  const parsed = voucherSchema.safeParse(request.payload);
  if (!parsed.success) {
    const prefix = `${request.paths.payload}.payload`;
    return { ok: false, failure: invalidField(describeIssue(parsed.error, prefix), prefix) };
  }
  const { channelConfig: config, voucher, type } = parsed.data;
  const payer = config.payer;
  const mismatch = channelMismatch(config, voucher.channelId, request.requirements, ctx.chainId);
  if (mismatch) return { ok: false, payer, failure: mismatch };
  const badSignature = await checkVoucherSignature(ctx, config, voucher);
  if (badSignature) return { ok: false, payer, failure: badSignature };
  const channelId = voucher.channelId.toLowerCase() as Hex;
  const amount = voucher.maxClaimableAmount;
  let read = await channelState(ctx, channelId);
  // The book may predate a deposit made elsewhere (another replica, another facilitator, the
  // payer itself): an empty or short balance is read again before it refuses.
  if (read.ok && read.fromBook && (read.state.balance === 0n || amount > read.state.balance)) {
    read = await channelState(ctx, channelId, { reread: true });
  }
  if (!read.ok) return { ok: false, payer, failure: read.failure };
  const { state } = read;
  const wrong = voucherAgainst(state, channelId, amount, type);
  if (wrong) return { ok: false, payer, failure: wrong };
  // The newest voucher wins, on every replica: a lower one is stale once any was accepted. The
  // book answers a replay seen here without asking the store.
  const book = bookOf(ctx);
  const higher =
    amount < book.highestVoucher(channelId)
      ? book.highestVoucher(channelId)
      : await ctx.journal.raiseVoucher(`evm:${ctx.chainId}:${channelId}`, amount);
  if (higher !== undefined) {
    book.verified(channelId, higher);
    return {
      ok: false,
      payer,
      failure: rejected(
        "voucher_already_claimed",
        "cumulative_amount_mismatch",
        `a voucher of this channel for ${higher} cumulative was verified already; this one, for ${amount}, is stale`,
      ),
    };
  }
  book.verified(channelId, amount);
  return { ok: true, payer, extra: stateExtra(channelId, state) };
}
