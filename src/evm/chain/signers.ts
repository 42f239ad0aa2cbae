/** Settlement accounts used in turn, each handing out nonces one at a time (no gaps): a gap a
 * reorg left is filled with the dropped bytes if they still succeed, else a zero self-transfer. */
import {
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
  parseTransaction,
} from "viem";
import { setNewest } from "../../core/newest.js";
import type { MaySend } from "../../core/settle-loop.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import type { ChainAccess } from "./access.js";
import { sendRaw } from "./broadcast.js";
import { estimateFees } from "./fees.js";

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

/** How far a key's nonce lane is behind on one chain, and whether a hole blocks it. */
class LaneState {
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

/** Signed bytes kept per chain, to put a reorged transaction back. */
const RECENT_PER_CHAIN = 512;
const GAP_CHECK_EVERY_MS = 1_000;
const RECOUNT_EVERY_MS = 1_000;
const FILLER_GAS = 21_000n;
const HOLE_RETRY_SECONDS = 30;

/** What a lane tells serve's log: a hole found, or filled again. */
export type LaneEvent = {
  readonly event: "key_blocked" | "key_unblocked";
  readonly signer: Address;
  readonly hole: Hole;
};
/** A pending count read ahead is used only this soon after (by a send of the same settle). */
const READ_AHEAD_MS = 5_000;

export class SignerLane {
  readonly account: LocalAccount;
  readonly address: Address;
  /** The promise chain that runs this account's tasks one at a time. */
  #tail: Promise<unknown> = Promise.resolve();
  readonly #states = new Map<number, LaneState>();
  readonly #recounts = new Map<number, Promise<void>>();
  readonly #recountedAt = new Map<number, number>();
  readonly #tell: (event: LaneEvent) => void;
  readonly #next = new Map<number, number>();
  /** Highest nonce a node took: a lagging read replica's pending count must not go below it. */
  readonly #taken = new Map<number, number>();
  readonly #stale = new Set<number>();
  readonly #recent = new Map<number, Map<number, Hex>>();
  readonly #gapChecks = new Map<number, { at: number; done: Promise<void> }>();
  readonly #ahead = new Map<number, { readonly at: number; readonly read: Promise<number> }>();

  constructor(account: LocalAccount, tell: (event: LaneEvent) => void = () => undefined) {
    this.account = account;
    this.address = account.address;
    this.#tell = tell;
  }

  state(chainId: number): LaneState {
    const state = this.#states.get(chainId) ?? new LaneState();
    this.#states.set(chainId, state);
    return state;
  }

  holes(): Hole[] {
    return [...this.#states.values()].flatMap((state) => (state.hole ? [state.hole] : []));
  }

  /** The node has mined `count` of this key's nonces: a hole below it is filled. */
  sawMined(chainId: number, count: number): void {
    const state = this.state(chainId);
    state.sawMined(count);
    const hole = state.hole;
    if (hole && count > hole.nonce) {
      state.hole = undefined;
      this.#tell({ event: "key_unblocked", signer: this.address, hole });
    }
  }

  /** Nothing at `nonce` will be mined: hand out nothing past it until the mined count passes. */
  blocked(chainId: number, nonce: number, since: number, reason: string): void {
    const state = this.state(chainId);
    if (state.hole || (state.mined ?? 0) > nonce) return;
    state.hole = { chainId, nonce, since, reason };
    this.#tell({ event: "key_blocked", signer: this.address, hole: state.hole });
  }

  /** Refused past a hole, or when the backlog outlasts the confirm timeout (recounted first). */
  async admission(ctx: ChainAccess): Promise<Failure | undefined> {
    const state = this.state(ctx.chainId);
    if (!this.#refusal(ctx, state)) {
      // Behind: learn the mined count in the background, at most once a second.
      const last = this.#recountedAt.get(ctx.chainId) ?? 0;
      if (state.backlog > 1 && Date.now() - last >= RECOUNT_EVERY_MS) void this.#recount(ctx);
      return undefined;
    }
    await this.#recount(ctx);
    return this.#refusal(ctx, state);
  }

  #refusal(ctx: ChainAccess, state: LaneState): Failure | undefined {
    const network = caip2(ctx.chainId);
    if (state.hole) {
      const { nonce, since, reason } = state.hole;
      return failure(
        "overloaded",
        `settlement key ${this.address} is blocked on ${network}: its transaction at nonce ${nonce} has not been mined since ${new Date(since).toISOString()} (${reason}); nothing is sent with this key past it until it is, so nothing was sent`,
        { retryAfterSeconds: HOLE_RETRY_SECONDS },
      );
    }
    const waitMs = state.expectedWaitMs(ctx.confirmTimeoutMs);
    if (waitMs === undefined || waitMs <= ctx.confirmTimeoutMs) return undefined;
    const seconds = Number.isFinite(waitMs) ? Math.ceil(waitMs / 1000) : undefined;
    const wait = (seconds ?? 60) - Math.floor(ctx.confirmTimeoutMs / 1000);
    return failure(
      "overloaded",
      `settlement key ${this.address} is ${state.backlog} transactions behind on ${network}${seconds === undefined ? ", none mined lately" : `, about ${seconds} s of mining`}: more than the ${Math.round(ctx.confirmTimeoutMs / 1000)} s a settle waits to be confirmed, so nothing was sent; retry later`,
      { retryAfterSeconds: Math.min(60, Math.max(1, wait)) },
    );
  }

  /** Reads the node's mined count of this key again, shared by the settles asking meanwhile. */
  #recount(ctx: ChainAccess): Promise<void> {
    const inFlight = this.#recounts.get(ctx.chainId);
    if (inFlight) return inFlight;
    this.#recountedAt.set(ctx.chainId, Date.now());
    const done = ctx.client
      .getTransactionCount({ address: this.address, blockTag: "latest" })
      .then((count) => this.sawMined(ctx.chainId, count))
      .catch(() => undefined)
      .finally(() => this.#recounts.delete(ctx.chainId));
    this.#recounts.set(ctx.chainId, done);
    return done;
  }

  /** Runs `send` with the next nonce, one at a time; it advances only if `consumed`. */
  withNonce<T>(
    client: PublicClient,
    chainId: number,
    send: (nonce: number) => Promise<{ consumed: boolean; value: T }>,
  ): Promise<T> {
    return this.exclusive(async () => {
      let nonce = this.#next.get(chainId);
      if (nonce === undefined || this.#stale.has(chainId)) {
        const ahead = this.#ahead.get(chainId);
        this.#ahead.delete(chainId);
        const fresh = ahead && Date.now() - ahead.at < READ_AHEAD_MS ? ahead.read : undefined;
        const pending = await (fresh ?? this.pendingCount(client));
        this.#stale.delete(chainId);
        nonce = Math.max(pending, nonce ?? 0, (this.#taken.get(chainId) ?? -1) + 1);
      }
      const { consumed, value } = await send(nonce);
      if (consumed) {
        this.#next.set(chainId, nonce + 1);
        this.state(chainId).handedOut(nonce);
      }
      return value;
    });
  }

  /** The node's count of this key's transactions, pending ones included: its next nonce. */
  pendingCount(client: PublicClient): Promise<number> {
    return client.getTransactionCount({ address: this.address, blockTag: "pending" });
  }

  /** Reads the pending count early when the next send will need it (one round trip less). */
  readAhead(client: PublicClient, chainId: number): void {
    if (this.#ahead.has(chainId)) return;
    if (this.#next.has(chainId) && !this.#stale.has(chainId)) return;
    const read = this.pendingCount(client);
    const ahead = { at: Date.now(), read };
    read.catch(() => {
      if (this.#ahead.get(chainId) === ahead) this.#ahead.delete(chainId);
    });
    this.#ahead.set(chainId, ahead);
  }

  /** Forget the cached nonce (after "nonce too low", an unsent nonce): re-read it next time. */
  forget(chainId: number): void {
    this.#next.delete(chainId);
    this.#ahead.delete(chainId);
  }

  /** A nonce of ours is used: re-read the count, never handing out again what went out. */
  refresh(chainId: number): void {
    this.#stale.add(chainId);
    this.#ahead.delete(chainId);
  }

  /** After an outage the node may be another (restarted, reset): forget what it took, too. */
  reset(chainId: number): void {
    this.forget(chainId);
    this.#stale.delete(chainId);
    this.#taken.delete(chainId);
  }

  /** A node took `nonce` from this account, or saw it used: never hand it out again. */
  observe(chainId: number, nonce: number): void {
    const next = this.#next.get(chainId);
    if (next !== undefined && next <= nonce) this.#next.set(chainId, nonce + 1);
    if ((this.#taken.get(chainId) ?? -1) < nonce) this.#taken.set(chainId, nonce);
  }

  /** Runs a task inside this account's lane. */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task, task);
    this.#tail = result.catch(() => undefined);
    return result;
  }

  /** Keeps the newest signed bytes at `nonce` (a replacement overwrites its predecessor). */
  remember(chainId: number, nonce: number, raw: Hex): void {
    const recent = this.#recent.get(chainId) ?? new Map<number, Hex>();
    this.#recent.set(chainId, recent);
    setNewest(recent, nonce, raw, RECENT_PER_CHAIN);
  }

  /** The newest signed bytes this lane sent at `nonce`, while it still keeps them. */
  recentRaw(chainId: number, nonce: number): Hex | undefined {
    return this.#recent.get(chainId)?.get(nonce);
  }

  /** Fills nonces below `nonce` a reorg emptied; one shared check per lane and chain a second. */
  repairGap(ctx: ChainAccess, nonce: number, may: MaySend): Promise<void> {
    const last = this.#gapChecks.get(ctx.chainId);
    if (last && Date.now() - last.at < GAP_CHECK_EVERY_MS) return last.done;
    const done = this.exclusive(() => this.#fillHoles(ctx, nonce, may)).catch(() => undefined);
    this.#gapChecks.set(ctx.chainId, { at: Date.now(), done });
    return done;
  }

  async #fillHoles(ctx: ChainAccess, below: number, may: MaySend): Promise<void> {
    const pending = await this.pendingCount(ctx.client);
    for (let hole = pending; hole < below; hole++) await this.#fill(ctx, hole, may);
    if (pending < below) this.observe(ctx.chainId, below);
  }

  async #fill(ctx: ChainAccess, nonce: number, may: MaySend): Promise<void> {
    const raw = this.recentRaw(ctx.chainId, nonce);
    if (raw && (await stillSucceeds(ctx, this.address, raw))) {
      await sendRaw(ctx, raw, may);
      return;
    }
    const fees = await estimateFees(ctx);
    const signed = await this.account.signTransaction({
      ...fees,
      chainId: ctx.chainId,
      to: this.address,
      value: 0n,
      gas: FILLER_GAS,
      nonce,
    });
    await sendRaw(ctx, signed, may);
  }
}

/** Whether a signed transaction of ours would still succeed if it were mined now. */
export async function stillSucceeds(ctx: ChainAccess, from: Address, raw: Hex): Promise<boolean> {
  const tx = parseTransaction(raw);
  if (!tx.to) return false;
  return ctx.client.call({ account: from, to: tx.to, data: tx.data }).then(
    () => true,
    () => false,
  );
}

/** Round-robin over the settlement accounts. */
export class SignerPool {
  readonly lanes: readonly SignerLane[];
  #turn = 0;
  /** Where the lanes' events go (serve's log). */
  onEvent: ((event: LaneEvent) => void) | undefined;

  constructor(accounts: readonly LocalAccount[]) {
    this.lanes = accounts.map((account) => new SignerLane(account, (e) => this.onEvent?.(e)));
  }

  /** Every hole of every lane: a key that sends nothing more on that chain until it is filled. */
  holes(): (Hole & { readonly signer: Address })[] {
    return this.lanes.flatMap((lane) => lane.holes().map((h) => ({ ...h, signer: lane.address })));
  }

  /** The next lane in turn that admits a settle, or the first lane's refusal. */
  async admitting(ctx: ChainAccess): Promise<SignerLane | Failure | undefined> {
    let first: Failure | undefined;
    for (let tried = 0; tried < this.lanes.length; tried++) {
      const lane = this.lanes[this.#turn++ % this.lanes.length] as SignerLane;
      const refusal = await lane.admission(ctx);
      if (!refusal) return lane;
      first ??= refusal;
    }
    return first;
  }

  get size(): number {
    return this.lanes.length;
  }

  get addresses(): Address[] {
    return this.lanes.map((lane) => lane.address);
  }

  byAddress(address: string): SignerLane | undefined {
    return this.lanes.find((lane) => lane.address.toLowerCase() === address.toLowerCase());
  }
}
