/**
 * Settlement signers: a pool of accounts used in turn, each with a nonce lane. Nonces of one
 * account are handed out one at a time so they never collide or leave gaps; everything slow (gas
 * estimation, journal syncs, broadcasts, receipts) runs outside the lane, in parallel.
 *
 * A lane also repairs gaps it did not make: after a reorg drops transactions of ours that the node
 * does not put back in its pool, later ones wait behind the hole forever. The lane fills each hole
 * with the dropped transaction's own bytes when it still has them and they would still succeed
 * (the payment lands again), else with a transfer of nothing to itself.
 */
import {
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
  parseTransaction,
} from "viem";
import type { ChainAccess } from "./access.js";
import { estimateFees } from "./fees.js";

/** A promise chain that runs one task at a time. */
class Lane {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task, task);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

/** Signed bytes kept per chain for the newest nonces, to put a reorged transaction back. */
const RECENT_PER_CHAIN = 512;
/** Gap checks per lane and chain are at most this frequent, however many settles wait. */
const GAP_CHECK_EVERY_MS = 1_000;
const FILLER_GAS = 21_000n;
/** A pending count read ahead is used only this soon after: by a send of the same settle. */
const READ_AHEAD_MS = 5_000;

export class SignerLane {
  readonly account: LocalAccount;
  readonly #lane = new Lane();
  /** Next nonce per chain, learned from the node's pending count and kept locally after that. */
  readonly #next = new Map<number, number>();
  /**
   * Per chain, the highest nonce a node took from this account (or said was used). A re-read
   * pending count never hands out one at or below it: a read replica that lags counts only the
   * blocks it has seen, and can answer a count below what we sent.
   */
  readonly #taken = new Map<number, number>();
  readonly #stale = new Set<number>();
  readonly #recent = new Map<number, Map<number, Hex>>();
  readonly #gapChecks = new Map<number, { at: number; done: Promise<void> }>();
  /** A pending count read ahead (readAhead), for the next send that has to read one. */
  readonly #ahead = new Map<number, { readonly at: number; readonly read: Promise<number> }>();

  constructor(account: LocalAccount) {
    this.account = account;
  }

  get address(): Address {
    return this.account.address;
  }

  /**
   * Runs `send` with this account's next nonce, one send at a time. `send` returns whether the
   * nonce was consumed (the node took the transaction, or may have): only then does it advance.
   */
  withNonce<T>(
    client: PublicClient,
    chainId: number,
    send: (nonce: number) => Promise<{ consumed: boolean; value: T }>,
  ): Promise<T> {
    return this.#lane.run(async () => {
      let nonce = this.#next.get(chainId);
      if (nonce === undefined || this.#stale.has(chainId)) {
        const ahead = this.#ahead.get(chainId);
        this.#ahead.delete(chainId);
        const fresh = ahead && Date.now() - ahead.at < READ_AHEAD_MS ? ahead.read : undefined;
        const pending = await (fresh ??
          client.getTransactionCount({ address: this.address, blockTag: "pending" }));
        this.#stale.delete(chainId);
        nonce = Math.max(pending, nonce ?? 0, (this.#taken.get(chainId) ?? -1) + 1);
      }
      const { consumed, value } = await send(nonce);
      if (consumed) this.#next.set(chainId, nonce + 1);
      return value;
    });
  }

  /**
   * Starts reading the pending count now, alongside the settle's other reads, when the next send
   * will have to read it (nothing known yet, or known stale): one round trip less before it. What
   * makes a count stale (forget, refresh, reset) drops a read made before it.
   */
  readAhead(client: PublicClient, chainId: number): void {
    if (this.#ahead.has(chainId)) return;
    if (this.#next.has(chainId) && !this.#stale.has(chainId)) return;
    const read = client.getTransactionCount({ address: this.address, blockTag: "pending" });
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

  /**
   * A node said a nonce of ours is used by another: the count is read again, but what was handed
   * out meanwhile (settles in flight) is never handed out again.
   */
  refresh(chainId: number): void {
    this.#stale.add(chainId);
    this.#ahead.delete(chainId);
  }

  /** After an outage the node may be another (restarted, reset): forget what it took, too. */
  reset(chainId: number): void {
    this.#next.delete(chainId);
    this.#ahead.delete(chainId);
    this.#stale.delete(chainId);
    this.#taken.delete(chainId);
  }

  /** A node took `nonce` from this account, or saw it used: never hand it out again. */
  observe(chainId: number, nonce: number): void {
    const next = this.#next.get(chainId);
    if (next !== undefined && next <= nonce) this.#next.set(chainId, nonce + 1);
    if ((this.#taken.get(chainId) ?? -1) < nonce) this.#taken.set(chainId, nonce);
  }

  /** Runs a task inside this account's lane (for re-broadcasting a journaled transaction). */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    return this.#lane.run(task);
  }

  /** Keeps the newest signed bytes at `nonce` (a replacement overwrites its predecessor). */
  remember(chainId: number, nonce: number, raw: Hex): void {
    let recent = this.#recent.get(chainId);
    if (!recent) {
      recent = new Map();
      this.#recent.set(chainId, recent);
    }
    recent.delete(nonce);
    recent.set(nonce, raw);
    if (recent.size > RECENT_PER_CHAIN) {
      const oldest = recent.keys().next();
      if (!oldest.done) recent.delete(oldest.value);
    }
  }

  /** The newest signed bytes this lane sent at `nonce`, while it still keeps them. */
  recentRaw(chainId: number, nonce: number): Hex | undefined {
    return this.#recent.get(chainId)?.get(nonce);
  }

  /**
   * Our transaction at `nonce` has waited a while: if the node's pending count says nonces below
   * it are empty (a reorg dropped what was there), fill them so it can be mined, and put it back
   * if it is gone too. Checks are shared: one per lane and chain per second, however many wait.
   */
  repairGap(ctx: ChainAccess, nonce: number): Promise<void> {
    const last = this.#gapChecks.get(ctx.chainId);
    if (last && Date.now() - last.at < GAP_CHECK_EVERY_MS) return last.done;
    const done = this.exclusive(() => this.#fillHoles(ctx, nonce)).catch(() => undefined);
    this.#gapChecks.set(ctx.chainId, { at: Date.now(), done });
    return done;
  }

  async #fillHoles(ctx: ChainAccess, below: number): Promise<void> {
    const { client } = ctx;
    const pending = await client.getTransactionCount({
      address: this.address,
      blockTag: "pending",
    });
    for (let hole = pending; hole < below; hole++) await this.#fill(ctx, hole);
    if (pending < below) this.observe(ctx.chainId, below);
  }

  async #fill(ctx: ChainAccess, nonce: number): Promise<void> {
    const { client } = ctx;
    const raw = this.recentRaw(ctx.chainId, nonce);
    if (raw && (await stillSucceeds(ctx, this.address, raw))) {
      await client.sendRawTransaction({ serializedTransaction: raw });
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
    await client.sendRawTransaction({ serializedTransaction: signed });
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

  constructor(accounts: readonly LocalAccount[]) {
    this.lanes = accounts.map((account) => new SignerLane(account));
  }

  get size(): number {
    return this.lanes.length;
  }

  get addresses(): Address[] {
    return this.lanes.map((lane) => lane.address);
  }

  next(): SignerLane | undefined {
    const lane = this.lanes[this.#turn % Math.max(1, this.lanes.length)];
    this.#turn++;
    return lane;
  }

  byAddress(address: string): SignerLane | undefined {
    return this.lanes.find((lane) => lane.address.toLowerCase() === address.toLowerCase());
  }
}
