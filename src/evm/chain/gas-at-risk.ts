/**
 * Gas at risk, bounded over time and not only per payer. A settlement that reverts, runs out of
 * gas or succeeds without moving the payment wasted our gas; a fresh payer address costs an
 * attacker nothing, so the payer throttle alone cannot stop many of them. Each waste is counted
 * against the payer (the throttle), the asset, and a budget of wasted gas per chain and hour:
 * - an asset that moved nothing is refused for the window; one that ran out of gas too, at once
 *   if we never settled it, at the third time if we did; one we never settled whose settlements
 *   reverted for three different payers is refused as well (one payer's reverts are its own
 *   doing, and a known asset's reverts its payers': they count there);
 * - past the chain's budget, payers with no settlement with us wait (429, `Retry-After`) while
 *   payers with a history keep being served.
 */
import { getAddress } from "viem";
import type { Waste } from "../../core/store.js";
import type { PayerThrottle } from "../../core/throttle.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import { grouped } from "./gas-bounds.js";

export type { Waste };

type WasteCause = Waste["cause"];

export interface GasAtRiskOptions {
  /** Wasted gas per chain and window before payers without history wait (default 500,000). */
  readonly budgetGas?: bigint | undefined;
  /** ...or per chain id, which wins. */
  readonly budgetGasByChain?: Readonly<Record<number, bigint>> | undefined;
  /** The window, in milliseconds (default one hour). */
  readonly windowMs?: number | undefined;
  /** Assets that always count as known (each network's USDC, the operator's allowed list). */
  readonly trusted?: ((chainId: number, asset: string) => boolean) | undefined;
  /** How many settlements of this payer or asset the store remembers (other replicas, restarts). */
  readonly settlementsOf?:
    | ((
        chainId: number,
        who: { payer: string } | { asset: string },
        atMost: number,
      ) => Promise<number>)
    | undefined;
  /** Told of each waste recorded here (a shared store passes it on to the other replicas). */
  readonly onWaste?: ((chainId: number, waste: Waste) => void) | undefined;
}

/** Wasted gas a chain absorbs per hour from payers we know nothing of: about ten reverted transfers. */
export const DEFAULT_WASTED_GAS_BUDGET = 500_000n;
const WINDOW_MS = 60 * 60_000;
/** Payers, assets and events remembered at once; past it the oldest are forgotten. */
const REMEMBERED = 10_000;
const KNOWN_REMEMBERED = 100_000;

/**
 * How many wastes of each cause refuse an asset: [never settled here, settled here]. Reverts are
 * counted once per payer.
 */
const ASSET_LIMITS: Readonly<Record<WasteCause, readonly [number, number]>> = {
  "no-transfer": [1, 1],
  "out-of-gas": [1, 3],
  reverted: [3, Number.POSITIVE_INFINITY],
};

interface Event {
  readonly at: number;
  readonly gas: bigint;
}

export class GasAtRisk {
  readonly #throttle: PayerThrottle;
  readonly #options: GasAtRiskOptions;
  readonly #windowMs: number;
  /** Per chain: wasted gas, oldest first. */
  readonly #wasted = new Map<number, Event[]>();
  /** Per chain:asset: the causes and times of its wastes. */
  readonly #assetWastes = new Map<string, { cause: WasteCause; payer: string; at: number }[]>();
  /** chain:payer and chain:asset that settled with us. */
  readonly #known = new Set<string>();

  constructor(throttle: PayerThrottle, options: GasAtRiskOptions = {}) {
    this.#throttle = throttle;
    this.#options = options;
    this.#windowMs = options.windowMs ?? WINDOW_MS;
  }

  /** The wasted-gas budget of `chainId` per window. */
  budget(chainId: number): bigint {
    return (
      this.#options.budgetGasByChain?.[chainId] ??
      this.#options.budgetGas ??
      DEFAULT_WASTED_GAS_BUDGET
    );
  }

  /** Gas wasted on `chainId` within the window. */
  wastedGas(chainId: number, now = Date.now()): bigint {
    return this.#recent(chainId, now).reduce((sum, e) => sum + e.gas, 0n);
  }

  /** The chains with waste in the window. */
  chains(): number[] {
    return [...this.#wasted.keys()];
  }

  /** A settlement of ours wasted gas: counted here and told to the other replicas. */
  charge(chainId: number, waste: Waste, now = Date.now()): void {
    this.#options.onWaste?.(chainId, waste);
    this.record(chainId, waste, now, now);
  }

  /** A waste charged at `at` (by another replica, say), told to no one. */
  record(chainId: number, waste: Waste, at: number, now = Date.now()): void {
    if (now - at >= this.#windowMs) return;
    // Out of gas is not the payer's doing: it signed an ordinary transfer.
    if (waste.cause !== "out-of-gas") this.#throttle.record(chainId, waste.payer, at, now);
    const events = this.#recent(chainId, now);
    events.push({ at, gas: waste.gas });
    events.sort((a, b) => a.at - b.at);
    if (events.length > REMEMBERED) events.splice(0, events.length - REMEMBERED);
    this.#wasted.set(chainId, events);
    const key = assetKey(chainId, waste.asset);
    const wastes = (this.#assetWastes.get(key) ?? []).filter((w) => now - w.at < this.#windowMs);
    wastes.push({ cause: waste.cause, payer: waste.payer.toLowerCase(), at });
    this.#assetWastes.delete(key);
    this.#assetWastes.set(key, wastes);
    forgetOldest(this.#assetWastes, REMEMBERED);
  }

  /** A settlement landed with its Transfer: its payer and asset are known from now on. */
  settled(chainId: number, payer: string, asset: string): void {
    for (const key of [payerKey(chainId, payer), assetKey(chainId, asset)]) {
      this.#known.delete(key);
      this.#known.add(key);
    }
    if (this.#known.size > KNOWN_REMEMBERED) {
      const oldest = this.#known.values().next();
      if (!oldest.done) this.#known.delete(oldest.value);
    }
  }

  /** Why a settlement of `payer` in `asset` is refused now, if it is. */
  async refusal(
    chainId: number,
    payer: string,
    asset: string,
    now = Date.now(),
  ): Promise<Failure | undefined> {
    const throttled = this.#throttle.refusal(chainId, payer, now);
    if (throttled) return throttled;
    const assetRefused = await this.#assetRefusal(chainId, asset, now);
    if (assetRefused) return assetRefused;
    const budget = this.budget(chainId);
    const events = this.#recent(chainId, now);
    let wasted = 0n;
    for (const e of events) wasted += e.gas;
    if (wasted < budget) return undefined;
    if (await this.#isKnown(chainId, { payer })) return undefined;
    // Free again once enough of the window's waste has aged out to bring it under the budget.
    let left = wasted;
    let freeAt = now;
    for (const e of events) {
      if (left < budget) break;
      left -= e.gas;
      freeAt = e.at + this.#windowMs;
    }
    const seconds = Math.max(1, Math.ceil((freeAt - now) / 1000));
    return failure(
      "payer_throttled",
      `settlements on ${caip2(chainId)} wasted ${grouped(wasted)} gas in the last ${this.#minutes()} min (reverted or moved nothing), over the budget of ${grouped(budget)}; payers with no settlement here yet are refused for ${seconds} s, payers with one are still served`,
      { retryAfterSeconds: seconds },
    );
  }

  async #assetRefusal(chainId: number, asset: string, now: number) {
    const key = assetKey(chainId, asset);
    const wastes = this.#assetWastes.get(key)?.filter((w) => now - w.at < this.#windowMs);
    if (!wastes || wastes.length === 0) {
      this.#assetWastes.delete(key);
      return undefined;
    }
    const counts = new Map<WasteCause, { n: number; last: number }>();
    const revertedFor = new Set<string>();
    for (const w of wastes) {
      if (w.cause === "reverted") {
        if (revertedFor.has(w.payer)) continue;
        revertedFor.add(w.payer);
      }
      const c = counts.get(w.cause) ?? { n: 0, last: 0 };
      counts.set(w.cause, { n: c.n + 1, last: Math.max(c.last, w.at) });
    }
    let known: boolean | undefined;
    for (const [cause, { n, last }] of counts) {
      const [fresh, settled] = ASSET_LIMITS[cause];
      if (n < fresh) continue;
      known ??= await this.#isKnown(chainId, { asset });
      if (n < (known ? settled : fresh)) continue;
      const seconds = Math.max(1, Math.ceil((last + this.#windowMs - now) / 1000));
      return failure(
        "asset_throttled",
        `settlements with asset ${getAddress(asset)} on ${caip2(chainId)} ${WHAT[cause]} ${n} time${n === 1 ? "" : "s"}${cause === "reverted" ? " (for different payers)" : ""} in the last ${this.#minutes()} min; it is refused for ${seconds} s`,
        { retryAfterSeconds: seconds },
      );
    }
    return undefined;
  }

  async #isKnown(chainId: number, who: { payer: string } | { asset: string }): Promise<boolean> {
    const key = "payer" in who ? payerKey(chainId, who.payer) : assetKey(chainId, who.asset);
    if (this.#known.has(key)) return true;
    if ("asset" in who && this.#options.trusted?.(chainId, who.asset)) return true;
    const remembered = await this.#options.settlementsOf?.(chainId, who, 1).catch(() => 0);
    if (remembered) {
      this.#known.add(key);
      return true;
    }
    return false;
  }

  #recent(chainId: number, now: number): Event[] {
    const events = this.#wasted.get(chainId) ?? [];
    const first = events.findIndex((e) => now - e.at < this.#windowMs);
    if (first !== 0) events.splice(0, first === -1 ? events.length : first);
    if (events.length === 0) this.#wasted.delete(chainId);
    else this.#wasted.set(chainId, events);
    return events;
  }

  #minutes(): number {
    return Math.round(this.#windowMs / 60_000);
  }
}

const WHAT: Readonly<Record<WasteCause, string>> = {
  "no-transfer": "succeeded without moving the payment",
  "out-of-gas": "ran out of gas",
  reverted: "reverted",
};

const payerKey = (chainId: number, payer: string) => `${chainId}:p:${payer.toLowerCase()}`;
const assetKey = (chainId: number, asset: string) => `${chainId}:a:${asset.toLowerCase()}`;

function forgetOldest<K, V>(map: Map<K, V>, max: number): void {
  while (map.size > max) {
    const oldest = map.keys().next();
    if (oldest.done) return;
    map.delete(oldest.value);
  }
}
