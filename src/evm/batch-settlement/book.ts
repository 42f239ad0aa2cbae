/**
 * What this process knows of each channel: its on-chain state as last read (or as our own
 * transactions changed it) and the highest voucher verified. A voucher verify answers from here
 * without an RPC while the state is fresh: a channel's balance can only fall by a refund its
 * receiver authorizer signs or a withdrawal that waits at least 15 minutes after it shows on
 * chain, so a read a few seconds old cannot make a voucher look covered when it is not. A refund
 * sent or seen by any replica is recorded in the store, and a voucher checked against a read that
 * predates it is checked again (voucher.ts); one the receiver sends itself shows at the next read.
 */
import type { Hex } from "viem";
import { setNewest } from "../../core/newest.js";
import type { ChannelState } from "./channel.js";

export interface KnownChannel {
  readonly state: ChannelState;
  /** When `state` was read (unix milliseconds). */
  readonly readAt: number;
  /** The highest cumulative amount a voucher of this channel was found valid for. */
  readonly highestVoucher: bigint;
}

/** How long a channel's state read serves voucher verifies, by default. */
export const DEFAULT_STATE_TTL_MS = 30_000;
/**
 * Reads made to refuse a voucher (an empty channel, a voucher over the balance), at most this many
 * per channel and window: a deposit made elsewhere still shows at once, and a flood of such
 * vouchers costs a read per channel and second, not one per voucher.
 */
const REREADS_PER_WINDOW = 2;
const REREAD_WINDOW_MS = 2_000;

export class ChannelBook {
  readonly #channels = new Map<string, KnownChannel>();
  readonly #rereads = new Map<string, number[]>();
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(options: { ttlMs?: number; max?: number } = {}) {
    this.#ttlMs = options.ttlMs ?? DEFAULT_STATE_TTL_MS;
    this.#max = options.max ?? 100_000;
  }

  /** The channel's state if read recently enough to answer from. */
  fresh(channelId: Hex, now = Date.now()): KnownChannel | undefined {
    const known = this.#channels.get(channelId);
    if (!known || now - known.readAt > this.#ttlMs) return undefined;
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
    setNewest(this.#rereads, channelId, recent, this.#max);
    return true;
  }

  highestVoucher(channelId: Hex): bigint {
    return this.#channels.get(channelId)?.highestVoucher ?? 0n;
  }

  /** A fresh read, or the state our own transaction left. */
  remember(channelId: Hex, state: ChannelState, now = Date.now()): void {
    const highestVoucher = this.highestVoucher(channelId);
    this.#channels.delete(channelId);
    this.#channels.set(channelId, { state, readAt: now, highestVoucher });
    // Oldest first in a Map: forget the least recently read beyond the cap.
    if (this.#channels.size > this.#max) {
      const oldest = this.#channels.keys().next().value;
      if (oldest !== undefined) this.#channels.delete(oldest);
    }
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
