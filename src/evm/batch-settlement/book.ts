/**
 * What this process knows of each channel: its state as last read (or as our transactions left it)
 * and the highest voucher verified. A fresh state answers a voucher without an RPC: a balance falls
 * only by a refund (every replica hears of ours through the store) or a withdrawal that waits 15
 * minutes after it shows, so a read seconds old cannot make a voucher look covered when it is not.
 */
import type { Hex } from "viem";
import { setNewest } from "../../core/newest.js";
import type { ChannelState } from "./channel.js";

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
/**
 * Reads made to refuse a voucher (an empty channel, one over the balance), per channel and window:
 * a deposit made elsewhere still shows at once, and a flood of such vouchers costs few reads.
 */
const REREADS_PER_WINDOW = 2;
const REREAD_WINDOW_MS = 2_000;

export class ChannelBook {
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
  remember(channelId: Hex, state: ChannelState, now = Date.now()): void {
    const highestVoucher = this.highestVoucher(channelId);
    this.#channels.delete(channelId);
    this.#channels.set(channelId, { state, readAt: now, highestVoucher });
    // Oldest first in a Map: forget the least recently read beyond the cap.
    if (this.#channels.size > MAX_CHANNELS) {
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
