/** How far a key's nonce lane is behind on one chain, and whether a hole blocks it. */
/** A nonce of ours the node took and does not mine, replaced or not: nothing past it can land. */
export interface Hole {
  readonly chainId: number;
  readonly nonce: number;
  /** When it was first sent or found unmined (unix ms). */
  readonly since: number;
  readonly reason: string;
}

type Sample = { readonly at: number; readonly mined: number };

/** Before anything was mined in a busy spell, the lane is judged only after this long. */
const FIRST_JUDGED_AFTER_FRACTION = 0.5;
/** A lane this few transactions behind is never refused for being behind. */
const SMALL_BACKLOG = 2;

export class LaneState {
  next: number | undefined;
  mined: number | undefined;
  hole: Hole | undefined;
  /** Mined counts seen since the lane last had nothing unmined (the first: that moment). */
  #samples: Sample[] = [];

  get backlog(): number {
    if (this.next === undefined || this.mined === undefined) return 0;
    return Math.max(0, this.next - this.mined);
  }

  sawMined(count: number, now = Date.now()): void {
    if (this.mined !== undefined && count <= this.mined) return;
    this.mined = count;
    this.#samples.push({ at: now, mined: count });
    if (this.#samples.length > 256) this.#samples.splice(0, this.#samples.length - 256);
  }

  /** A nonce was handed out: a busy spell starts if the lane had nothing unmined. */
  handedOut(nonce: number, now = Date.now()): void {
    this.mined ??= nonce;
    if (this.backlog === 0) this.#samples = [{ at: now, mined: this.mined }];
    this.next = Math.max(this.next ?? 0, nonce + 1);
  }

  /** How long one handed out now would wait to be mined (ms), from the spell's last `windowMs`. */
  expectedWaitMs(windowMs: number, now = Date.now()): number | undefined {
    const backlog = this.backlog;
    const first = this.#samples[0];
    if (backlog <= SMALL_BACKLOG || this.mined === undefined || !first) return undefined;
    let base = first;
    for (const sample of this.#samples) if (sample.at <= now - windowMs) base = sample;
    const span = now - base.at;
    const minedSince = this.mined - base.mined;
    if (minedSince <= 0) {
      return span >= windowMs * FIRST_JUDGED_AFTER_FRACTION ? Number.POSITIVE_INFINITY : undefined;
    }
    return (backlog * span) / minedSince;
  }
}
