/**
 * How far a key's nonce lane is behind on one chain, and whether it is blocked: what a settle is
 * told before it is given a nonce. A lane behind by more than it mines in a confirm timeout
 * refuses at once (the settle would only wait out its timeout); a lane whose head transaction the
 * node does not mine, even replaced, stops handing out nonces past it until the hole is filled.
 */

/** A nonce of ours the node took and does not mine, replaced or not: nothing past it can land. */
export interface Hole {
  readonly chainId: number;
  readonly nonce: number;
  /** When it was first sent or found unmined (unix ms). */
  readonly since: number;
  readonly reason: string;
}

/** Mined counts seen, with when: how fast this lane's transactions are mined lately. */
interface Sample {
  readonly at: number;
  readonly mined: number;
}

/** Before anything was mined in a busy spell, the lane is judged only after this long. */
const FIRST_JUDGED_AFTER_FRACTION = 0.5;
/** A lane this few transactions behind is never refused for being behind. */
const SMALL_BACKLOG = 2;

export class LaneState {
  /** The nonce the lane hands out next, once it knows it. */
  next: number | undefined;
  /** The lane's mined count as far as it has seen (the node's "latest" count). */
  mined: number | undefined;
  hole: Hole | undefined;
  /** Mined counts seen since the lane last had nothing unmined (the first: that moment). */
  #samples: Sample[] = [];

  /** Unmined transactions of ours, as far as the lane knows. */
  get backlog(): number {
    if (this.next === undefined || this.mined === undefined) return 0;
    return Math.max(0, this.next - this.mined);
  }

  /** The node has mined `count` of this key's nonces (a receipt, or its "latest" count). */
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

  /**
   * How long a transaction handed out now would wait to be mined, in ms, judged from how fast
   * the lane's were mined over the last `windowMs` of its busy spell; undefined while that cannot
   * be told yet (or the lane is hardly behind).
   */
  expectedWaitMs(windowMs: number, now = Date.now()): number | undefined {
    const backlog = this.backlog;
    const first = this.#samples[0];
    if (backlog <= SMALL_BACKLOG || this.mined === undefined || !first) return undefined;
    let base = first;
    for (const sample of this.#samples) if (sample.at <= now - windowMs) base = sample;
    const span = now - base.at;
    const minedSince = this.mined - base.mined;
    if (minedSince <= 0) {
      // Nothing mined in the spell yet: only a spell of half a timeout tells.
      return span >= windowMs * FIRST_JUDGED_AFTER_FRACTION ? Number.POSITIVE_INFINITY : undefined;
    }
    return (backlog * span) / minedSince;
  }
}
