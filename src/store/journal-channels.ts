/**
 * What the journal file keeps of batch-settlement channels: the highest voucher found valid per
 * channel, and when a channel's balance last changed by other means than a claim (a refund, a
 * withdrawal), so that a voucher checked against an older read is checked again. Raises are
 * written a second later, one line per channel raised meanwhile; a change is written at once.
 */
import { setNewest } from "../core/newest.js";
import type { VoucherRaise } from "../core/store.js";

export type ChannelLine =
  /** The highest cumulative amount a voucher of a channel was found valid for. */
  | { t: "voucher"; channel: string; amount: string }
  /** The channel's balance changed at `at` (unix ms), or may until then. */
  | { t: "changed"; channel: string; at: number };

/** Channels remembered (the most recently raised or changed). */
const CHANNELS_KEPT = 100_000;

export class JournalChannels {
  readonly #vouchers = new Map<string, bigint>();
  readonly #changed = new Map<string, number>();
  readonly #dirty = new Set<string>();

  get size(): number {
    return this.#vouchers.size + this.#changed.size;
  }

  /** See SettlementStore.raiseVoucher; a raise is owed to the file until owed() hands it over. */
  raise(channel: string, amount: bigint, seenAt: number | undefined): VoucherRaise | undefined {
    const changedAt = this.#changed.get(channel);
    if (seenAt !== undefined && changedAt !== undefined && changedAt > seenAt) return { changedAt };
    const highest = this.#vouchers.get(channel);
    if (highest !== undefined && highest > amount) return { higher: highest };
    if (highest === amount) return undefined;
    this.apply({ t: "voucher", channel, amount: amount.toString() });
    this.#dirty.add(channel);
    return undefined;
  }

  /** A line read back from the file (this process's or another's), or just made here. */
  apply(line: ChannelLine): void {
    if (line.t === "voucher") {
      setNewest(this.#vouchers, line.channel, BigInt(line.amount), CHANNELS_KEPT);
      return;
    }
    const before = this.#changed.get(line.channel) ?? 0;
    setNewest(this.#changed, line.channel, Math.max(before, line.at), CHANNELS_KEPT);
  }

  /** The raises not yet written, each channel once. */
  owed(): ChannelLine[] {
    const lines: ChannelLine[] = [];
    for (const channel of this.#dirty) {
      const amount = this.#vouchers.get(channel);
      if (amount !== undefined) lines.push({ t: "voucher", channel, amount: amount.toString() });
    }
    this.#dirty.clear();
    return lines;
  }

  /** Everything kept, as a compacted file holds it. */
  all(): ChannelLine[] {
    return [
      ...[...this.#vouchers].map(
        ([channel, amount]): ChannelLine => ({ t: "voucher", channel, amount: amount.toString() }),
      ),
      ...[...this.#changed].map(([channel, at]): ChannelLine => ({ t: "changed", channel, at })),
    ];
  }
}
