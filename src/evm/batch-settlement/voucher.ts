/**
 * Verify of a voucher (and of a refund request's voucher): the payer's signature over the
 * cumulative amount, and that amount against the channel's balance and what was claimed. When
 * the channel's state is known (book.ts) and the payer authorizes with a key, nothing is read.
 */
import { type Address, type Hex, isAddressEqual, zeroAddress } from "viem";
import { setNewest } from "../../core/newest.js";
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

/** How long a payer's code, as read, serves its vouchers' signature checks. */
const CODE_TTL_MS = 30_000;

/**
 * The payer's code (an EOA has none), read once per payer and half minute rather than for every
 * voucher: whether it is a contract decides how its signature is checked, and that is not
 * something a flood of vouchers should cost a read each.
 */
function payerCode(ctx: EvmContext, payer: Address): Promise<Hex | undefined> {
  const codes = ctx.kept(
    "batch-settlement:payer-codes",
    () => new Map<string, { code: Promise<Hex | undefined>; at: number }>(),
  );
  const key = payer.toLowerCase();
  const now = Date.now();
  const known = codes.get(key);
  if (known && now - known.at < CODE_TTL_MS) return known.code;
  const code = ctx.client.getCode({ address: payer });
  // A failed read is not remembered: the next voucher reads again.
  code.catch(() => codes.delete(key));
  setNewest(codes, key, { code, at: now }, 100_000);
  return code;
}

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
        payerCode(ctx, config.payer),
      )
    : await recoversTo(ctx, config.payerAuthorizer, digest, voucher.signature);
  if (signed.ok) return undefined;
  if (signed.failure.code === "chain_unavailable") return signed.failure;
  return refuse(signed.failure.message.replace(/^the signature /, ""));
}

/**
 * Where the store keeps, for every replica, each channel's newest voucher (its cumulative amount,
 * the highest raised) and when the channel's balance last changed other than by a claim (a
 * refund, a withdrawal): SettlementStore.raiseHighest and markChanged. A journal written before
 * the store's state was generic reads its channel lines into this namespace
 * (store/journal-scheme-state.ts), and PostgreSQL's migration 13 moves its channels here.
 */
export const VOUCHER_NAMESPACE = "batch-settlement:voucher";

/** The store's id of a channel in VOUCHER_NAMESPACE. */
const storeChannel = (ctx: EvmContext, channelId: Hex) => `evm:${ctx.chainId}:${channelId}`;

/**
 * The channel's state: from the book while fresh, else read (and remembered). `fromBook` says
 * which: a state from the book only ever accepts; a refusal is decided on a read. `readAt`: when
 * the state was read (unix ms). A read that finds the balance lower or the refund nonce higher
 * than the book had it (a refund, a withdrawal) tells every replica through the store.
 */
export async function channelState(
  ctx: EvmContext,
  channelId: Hex,
  options: { readonly reread?: boolean } = {},
): Promise<
  | { ok: true; channelId: Hex; state: ChannelState; fromBook: boolean; readAt: number }
  | { ok: false; failure: Failure }
> {
  const book = bookOf(ctx);
  const known = options.reread ? undefined : book.fresh(channelId);
  if (known) {
    return { ok: true, channelId, state: known.state, fromBook: true, readAt: known.readAt };
  }
  const before = book.last(channelId);
  try {
    const readAt = Date.now();
    const state = await readChannel(ctx, channelId);
    book.remember(channelId, state, readAt);
    if (before && (state.balance < before.balance || state.refundNonce > before.refundNonce)) {
      // The book holds this read already: only the other replicas need telling.
      void recordChange(ctx, channelId, readAt);
    }
    return { ok: true, channelId, state, fromBook: false, readAt };
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "reading the channel") };
  }
}

/** The channel's balance changed (or may, until `at`): every replica reads it before a voucher. */
export function channelChanged(ctx: EvmContext, channelId: Hex, at: number): Promise<void> {
  bookOf(ctx).forget(channelId);
  return recordChange(ctx, channelId, at);
}

/** Tells the store (and so every replica) that the channel changed at `at`. */
const recordChange = (ctx: EvmContext, channelId: Hex, at: number) =>
  Promise.resolve(
    ctx.journal.markChanged(VOUCHER_NAMESPACE, storeChannel(ctx, channelId), at),
  ).catch(() => undefined);

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
  // payer itself): an empty or short balance is read again before it refuses, a few times per
  // channel and second at most (a flood of such vouchers costs a read per channel and second).
  const book = bookOf(ctx);
  const short = (state: ChannelState) => state.balance === 0n || amount > state.balance;
  if (read.ok && read.fromBook && short(read.state) && book.mayReread(channelId)) {
    read = await channelState(ctx, channelId, { reread: true });
  }
  if (!read.ok) return { ok: false, payer, failure: read.failure };
  let checked = await raiseAgainst(ctx, read, amount, type);
  if (checked === "changed") {
    // A refund or withdrawal since that read, here or on another replica: decide on a new read,
    // the freshest there is (a refund still in flight may change it again: that risk is the
    // chain's own, and the same on every replica).
    const again = await channelState(ctx, channelId, { reread: true });
    if (!again.ok) return { ok: false, payer, failure: again.failure };
    checked = await raiseAgainst(ctx, again, amount, type, { fresh: true });
  }
  if (checked === "changed") throw new Error("a fresh read is never stale");
  if (checked.ok) book.verified(channelId, amount);
  return { ...checked, payer };
}

/**
 * The voucher against a read of its channel, then raised in the store as the channel's newest:
 * its failure, its success (with the state as `extra`), or "changed" when the channel changed
 * after that read.
 */
async function raiseAgainst(
  ctx: EvmContext,
  read: { channelId: Hex; state: ChannelState; readAt: number },
  amount: bigint,
  type: "voucher" | "refund",
  options: { readonly fresh?: boolean } = {},
): Promise<VerifyResult | "changed"> {
  const { channelId, state, readAt } = read;
  const wrong = voucherAgainst(state, channelId, amount, type);
  if (wrong) return { ok: false, failure: wrong };
  // The newest voucher wins, on every replica: a lower one is stale once any was accepted. The
  // book answers a replay seen here without asking the store.
  const book = bookOf(ctx);
  const raised =
    amount < book.highestVoucher(channelId)
      ? { higher: book.highestVoucher(channelId) }
      : await ctx.journal.raiseHighest(
          VOUCHER_NAMESPACE,
          storeChannel(ctx, channelId),
          amount,
          options.fresh ? undefined : readAt,
        );
  if (raised === undefined) return { ok: true, payer: "", extra: stateExtra(channelId, state) };
  if (!("higher" in raised)) return "changed";
  book.verified(channelId, raised.higher);
  return {
    ok: false,
    failure: rejected(
      "voucher_already_claimed",
      "cumulative_amount_mismatch",
      `a voucher of this channel for ${raised.higher} cumulative was verified already; this one, for ${amount}, is stale`,
    ),
  };
}
