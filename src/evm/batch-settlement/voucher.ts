/** A voucher's verify: the payer's signature, the amount against the channel (its book if fresh). */
import { type Address, type Hex, isAddressEqual, zeroAddress } from "viem";
import { setNewest } from "../../core/newest.js";
import { type Failure, failed } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { VerifyResult } from "../../protocol/results.js";
import type { EvmContext } from "../context.js";
import { chainFailure } from "../exact/checks.js";
import { checkSignature, recoversTo } from "../exact/signature.js";
import { type ChannelState, channelMismatch, readChannel, stateExtra } from "./channel.js";
import { voucherDigest } from "./digests.js";
import { type ChannelConfig, parsePayload, type VoucherFields, voucherSchema } from "./payload.js";
import { rejected } from "./reasons.js";

/** A channel's last read and highest voucher. A balance falls only by a refund (the store tells
 * every replica) or a 15-minute withdrawal, so a fresh read cannot cover a voucher wrongly. */
interface KnownChannel {
  readonly state: ChannelState;
  /** When `state` was read (unix milliseconds). */
  readonly readAt: number;
  /** The highest cumulative amount a voucher of this channel was found valid for. */
  readonly highestVoucher: bigint;
}

/** How long a channel's state read serves voucher verifies. */
const STATE_TTL_MS = 30_000;
const MAX_CHANNELS = 100_000;
/** Rereads to refuse a voucher, per channel and window: a flood of them costs few reads. */
const REREADS_PER_WINDOW = 2;
const REREAD_WINDOW_MS = 2_000;

class ChannelBook {
  readonly #channels = new Map<string, KnownChannel>();
  readonly #rereads = new Map<string, number[]>();

  /** The channel's state if read recently enough to answer from. */
  fresh(channelId: Hex, now = Date.now()): KnownChannel | undefined {
    const known = this.#channels.get(channelId);
    if (!known || now - known.readAt > STATE_TTL_MS) return undefined;
    // A withdrawal under way: its end may be near, so every verify reads the chain.
    if (known.state.withdrawRequestedAt !== 0) return undefined;
    return known;
  }

  /** The state last read, however old (what a new read is compared with). */
  last(channelId: Hex): ChannelState | undefined {
    return this.#channels.get(channelId)?.state;
  }

  /** Whether the channel may be read again before a refusal now; if so, counts the read. */
  mayReread(channelId: Hex, now = Date.now()): boolean {
    const recent = (this.#rereads.get(channelId) ?? []).filter((t) => now - t < REREAD_WINDOW_MS);
    if (recent.length >= REREADS_PER_WINDOW) return false;
    recent.push(now);
    setNewest(this.#rereads, channelId, recent, MAX_CHANNELS);
    return true;
  }

  highestVoucher(channelId: Hex): bigint {
    return this.#channels.get(channelId)?.highestVoucher ?? 0n;
  }

  /** A fresh read, or the state our own transaction left. */
  remember(channelId: Hex, state: ChannelState, readAt = Date.now()): void {
    const known = { state, readAt, highestVoucher: this.highestVoucher(channelId) };
    setNewest(this.#channels, channelId, known, MAX_CHANNELS);
  }

  /** A voucher was found valid: a lower one of this channel is stale from now on. */
  verified(channelId: Hex, amount: bigint): void {
    const known = this.#channels.get(channelId);
    if (known && amount > known.highestVoucher) {
      this.#channels.set(channelId, { ...known, highestVoucher: amount });
    }
  }

  /** Our claim landed: the channel's claimed total is at least `total` now. */
  claimed(channelId: Hex, total: bigint): void {
    const known = this.#channels.get(channelId);
    if (!known || known.state.totalClaimed >= total) return;
    this.#channels.set(channelId, { ...known, state: { ...known.state, totalClaimed: total } });
  }

  /** Our transaction changed the channel in a way we cannot compute: read it next time. */
  forget(channelId: Hex): void {
    const known = this.#channels.get(channelId);
    if (known) this.#channels.set(channelId, { ...known, readAt: 0 });
  }
}

/** This facilitator's channel book (one per EVM family). */
export const bookOf = (ctx: EvmContext) =>
  ctx.kept("batch-settlement:channels", () => new ChannelBook());

const CODE_TTL_MS = 30_000;

/** The payer's code (an EOA has none), read once per half minute: not a read per voucher. */
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
  // A payer authorizer key signs plainly (the contract checks ECDSA); else the payer (or EIP-1271).
  const { payer, payerAuthorizer } = config;
  const signed = isAddressEqual(payerAuthorizer, zeroAddress)
    ? await checkSignature(ctx, payer, digest, voucher.signature, payerCode(ctx, payer))
    : await recoversTo(ctx, payerAuthorizer, digest, voucher.signature);
  if (signed.ok) return undefined;
  if (signed.failure.code === "chain_unavailable") return signed.failure;
  const why = signed.failure.message.replace(/^the signature /, "");
  return rejected("voucher_signature", `the voucher's signature ${why}`);
}

/** The store's namespace of each channel's newest voucher and last balance change (all replicas). */
export const VOUCHER_NAMESPACE = "batch-settlement:voucher";

/** The store's id of a channel in VOUCHER_NAMESPACE. */
const storeChannel = (ctx: EvmContext, channelId: Hex) => `evm:${ctx.chainId}:${channelId}`;

/** The channel's state: the book's while fresh (it only accepts), else read (refunds told to all). */
export async function channelState(ctx: EvmContext, channelId: Hex, reread = false) {
  const book = bookOf(ctx);
  const known = reread ? undefined : book.fresh(channelId);
  if (known) return { ok: true as const, channelId, ...known, fromBook: true };
  const before = book.last(channelId);
  try {
    const readAt = Date.now();
    const state = await readChannel(ctx, channelId);
    book.remember(channelId, state, readAt);
    // The book holds this read already: only the other replicas need telling.
    if (before && (state.balance < before.balance || state.refundNonce > before.refundNonce))
      void recordChange(ctx, channelId, readAt);
    return { ok: true as const, channelId, state, fromBook: false, readAt };
  } catch (error) {
    return { ok: false as const, failure: chainFailure(error, "reading the channel") };
  }
}

/** The channel's balance changed (or may, until `at`): every replica reads it before a voucher. */
export function channelChanged(ctx: EvmContext, channelId: Hex, at: number): Promise<void> {
  bookOf(ctx).forget(channelId);
  return recordChange(ctx, channelId, at);
}

const recordChange = (ctx: EvmContext, channelId: Hex, at: number) =>
  Promise.resolve(
    ctx.journal.markChanged(VOUCHER_NAMESPACE, storeChannel(ctx, channelId), at),
  ).catch(() => undefined);

/** Why a voucher for `amount` does not fit the channel (and a deposit's, with that deposit in). */
export function voucherAgainst(
  state: ChannelState,
  channelId: Hex,
  amount: bigint,
  type: "voucher" | "refund" | { readonly deposit: bigint },
): Failure | undefined {
  const deposit = typeof type === "object" ? type.deposit : undefined;
  if (state.balance === 0n && deposit === undefined) {
    return rejected("channel_not_found", `channel ${channelId} holds no deposit`);
  }
  if (amount > state.balance + (deposit ?? 0n)) {
    const balance =
      deposit === undefined
        ? `balance of ${state.balance}`
        : `${state.balance} plus this deposit of ${deposit}`;
    return rejected(
      "cumulative_exceeds_balance",
      `the voucher is for ${amount} cumulative, over the channel's ${balance}`,
    );
  }
  const belowClaimed =
    type === "refund" ? amount < state.totalClaimed : amount <= state.totalClaimed;
  if (belowClaimed) {
    return rejected(
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
  const parsed = parsePayload(request, voucherSchema, kind);
  if (!parsed.ok) return parsed;
  const { channelConfig: config, voucher, type } = parsed.value;
  const refuse = (failure: Failure) => ({ ok: false as const, payer: config.payer, failure });
  const wrong =
    channelMismatch(parsed.value, request.requirements, ctx.chainId) ??
    (await checkVoucherSignature(ctx, config, voucher));
  if (wrong) return refuse(wrong);
  const channelId = voucher.channelId.toLowerCase() as Hex;
  const amount = voucher.maxClaimableAmount;
  let read = await channelState(ctx, channelId);
  // The book may predate a deposit made elsewhere: a short balance is read again before a refusal
  // (rate-limited per channel, so a flood of such vouchers costs little).
  const book = bookOf(ctx);
  const short = (state: ChannelState) => state.balance === 0n || amount > state.balance;
  if (read.ok && read.fromBook && short(read.state) && book.mayReread(channelId)) {
    read = await channelState(ctx, channelId, true);
  }
  if (!read.ok) return refuse(read.failure);
  let checked = await raiseAgainst(ctx, read, amount, type);
  if (checked === "changed") {
    // A refund or withdrawal since that read, on any replica: decide on a fresh read.
    const again = await channelState(ctx, channelId, true);
    if (!again.ok) return refuse(again.failure);
    checked = await raiseAgainst(ctx, again, amount, type, true);
  }
  if (checked === "changed") throw new Error("a fresh read is never stale");
  if (checked.ok) book.verified(channelId, amount);
  return { ...checked, payer: config.payer };
}

/** The voucher against a read, then raised in the store; "changed": the channel changed since. */
async function raiseAgainst(
  ctx: EvmContext,
  read: { channelId: Hex; state: ChannelState; readAt: number },
  amount: bigint,
  type: "voucher" | "refund",
  fresh = false,
): Promise<VerifyResult | "changed"> {
  const { channelId, state, readAt } = read;
  const wrong = voucherAgainst(state, channelId, amount, type);
  if (wrong) return { ok: false, failure: wrong };
  // The newest voucher wins on every replica; the book answers a replay seen here by itself.
  const book = bookOf(ctx);
  const raised =
    amount < book.highestVoucher(channelId)
      ? { higher: book.highestVoucher(channelId) }
      : await ctx.journal.raiseHighest(
          VOUCHER_NAMESPACE,
          storeChannel(ctx, channelId),
          amount,
          fresh ? undefined : readAt,
        );
  if (raised === undefined) return { ok: true, payer: "", extra: stateExtra(channelId, state) };
  if (!("higher" in raised)) return "changed";
  book.verified(channelId, raised.higher);
  return failed(
    rejected(
      "cumulative_amount_mismatch",
      `a voucher of this channel for ${raised.higher} cumulative was verified already; this one, for ${amount}, is stale`,
    ),
  );
}
