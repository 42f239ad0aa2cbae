/** Wasted gas bounded per payer, asset and chain-hour: fresh payers cost an attacker nothing. An
 * asset is refused after ASSET_LIMITS wastes; past the budget a payer is served only while its
 * waste is under its (capped) landed settlements; past twice it, all wait (429). */
import { getAddress, type TransactionReceipt } from "viem";
import { arrayBytes, BudgetMap, stringBytes } from "../../core/byte-budget.js";
import { setNewest } from "../../core/newest.js";
import { type Chargeable, SETTLEMENTS_LOOKBACK_MS, type Waste } from "../../core/store.js";
import type { PayerThrottle } from "../../core/throttle.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import { grouped } from "./gas-bounds.js";

export type { Waste };

type WasteCause = Waste["cause"];

export interface GasAtRiskOptions {
  /** Wasted gas per chain and window before payers wait (default 500,000); per chain wins. */
  readonly budgetGas?: bigint | undefined;
  readonly budgetGasByChain?: Readonly<Record<number, bigint>> | undefined;
  readonly windowMs?: number | undefined;
  /** Assets that always count as known (stablecoins, the operator's allowed list). */
  readonly trusted?: ((chainId: number, asset: string) => boolean) | undefined;
  /** Settlements of this payer or asset the store remembers (other replicas, restarts). */
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

/** About eighteen reverted transfers per chain and hour. */
export const DEFAULT_WASTED_GAS_BUDGET = 500_000n;
const WINDOW_MS = 60 * 60_000;
/** Retry-After when gas at risk alone fills the budget: it ends as its transactions land or fail. */
const HELD_RETRY_S = 60;
/** Memory bounds; a payer forgotten counts what the store holds (settlementsOf). */
const REMEMBERED = 10_000;
const KNOWN_REMEMBERED = 100_000;
const LANDED_BUDGET_BYTES = 4 * 2 ** 20;

/** Wastes of each cause that refuse an asset: [never settled here, settled here, what it did]. */
const ASSET_LIMITS: Readonly<Record<WasteCause, readonly [number, number, string]>> = {
  "no-transfer": [1, 1, "succeeded without moving the payment"],
  "out-of-gas": [1, 3, "ran out of gas"],
  reverted: [3, Number.POSITIVE_INFINITY, "reverted"],
};

type Event = { readonly at: number; readonly gas: bigint; readonly payer: string };

export class GasAtRisk {
  readonly #throttle: PayerThrottle;
  readonly #options: GasAtRiskOptions;
  readonly windowMs: number;
  /** Per chain, oldest first. */
  readonly #wasted = new Map<number, Event[]>();
  readonly #assetWastes = new Map<string, { cause: WasteCause; payer: string; at: number }[]>();
  /** chain:asset that settled with us. */
  readonly #known = new Map<string, true>();
  /** Per chain:payer, when its settlements landed here (the newest, up to the throttle limit). */
  readonly #landed = new BudgetMap<string, number[]>(
    LANDED_BUDGET_BYTES,
    (key, times) => stringBytes(key) + arrayBytes(times.length),
  );
  /** chain:payer the store counted at the throttle limit, until when that answer is trusted. */
  readonly #countedFull = new Map<string, number>();
  /** Ether sent to payers (sponsoring.ts), in gas: counted as wasted until it lands or cannot. */
  readonly #atRisk = new Map<string, { chainId: number; at: number; waste: Waste }>();

  constructor(throttle: PayerThrottle, options: GasAtRiskOptions = {}) {
    this.#throttle = throttle;
    this.#options = options;
    this.windowMs = options.windowMs ?? WINDOW_MS;
  }

  budget(chainId: number): bigint {
    const { budgetGasByChain, budgetGas } = this.#options;
    return budgetGasByChain?.[chainId] ?? budgetGas ?? DEFAULT_WASTED_GAS_BUDGET;
  }

  wastedGas(chainId: number, now = Date.now()): bigint {
    return sumGas(this.#recent(chainId, now), this.#held(chainId, now));
  }

  chains(): number[] {
    const held = [...this.#atRisk.values()].map((h) => h.chainId);
    return [...new Set([...this.#wasted.keys(), ...held])];
  }

  /** Holds ether for a payer's transaction as at risk, or refuses: sponsoring never passes the budget. */
  hold(chainId: number, id: string, waste: Waste, now = Date.now()): Failure | undefined {
    const throttled = this.#throttle.refusal(chainId, waste.payer, now);
    if (throttled) return throttled;
    const budget = this.budget(chainId);
    const events = this.#recent(chainId, now);
    const held = this.#held(chainId, now);
    const wasted = sumGas(events, 0n);
    if (wasted + held + waste.gas <= budget) {
      this.#atRisk.set(id, { chainId, at: now, waste });
      return undefined;
    }
    // Free once enough waste ages out; gas at risk ends as its transactions land or fail.
    const level = budget - held - waste.gas;
    const seconds = level > 0n ? this.#secondsUntil(events, level, wasted, now) : HELD_RETRY_S;
    return failure(
      "payer_throttled",
      `funding ${waste.payer}'s own transaction (${grouped(waste.gas)} gas at our price) would take ${caip2(chainId)} past its budget of ${grouped(budget)} gas wasted or at risk per ${this.#minutes()} min (${grouped(wasted)} wasted, ${grouped(held)} at risk); nothing is sent to payers until there is room, in about ${seconds} s`,
      { retryAfterSeconds: seconds },
    );
  }

  /** Holds `waste` under `id` whatever the budget: sent already (its exact figure, a pick-up). */
  holdSent(chainId: number, id: string, waste: Waste, now = Date.now()): void {
    const at = this.#atRisk.get(id)?.at ?? now;
    this.#atRisk.set(id, { chainId, at, waste });
  }

  heldAt(id: string): Waste | undefined {
    return this.#atRisk.get(id)?.waste;
  }

  release(id: string): void {
    this.#atRisk.delete(id);
  }

  /** A settlement of ours wasted gas: counted here and told to the other replicas. */
  charge(chainId: number, waste: Waste, now = Date.now()): void {
    this.#options.onWaste?.(chainId, waste);
    this.record(chainId, waste, now, now);
  }

  /** The payer's transaction can never land: what was sent for it is charged. */
  chargeHeld(chainId: number, id: string, waste: Waste, now = Date.now()): void {
    this.#atRisk.delete(id);
    this.charge(chainId, waste, now);
  }

  /** A waste charged at `at` (by another replica, say), told to no one. */
  record(chainId: number, waste: Waste, at: number, now = Date.now()): void {
    if (now - at >= this.windowMs) return;
    // Out of gas is not the payer's doing: it signed an ordinary transfer.
    if (waste.cause !== "out-of-gas") this.#throttle.record(chainId, waste.payer, at, now);
    const events = this.#recent(chainId, now);
    events.push({ at, gas: waste.gas, payer: waste.payer.toLowerCase() });
    events.sort((a, b) => a.at - b.at);
    if (events.length > REMEMBERED) events.splice(0, events.length - REMEMBERED);
    this.#wasted.set(chainId, events);
    const key = assetKey(chainId, waste.asset);
    const wastes = (this.#assetWastes.get(key) ?? []).filter((w) => now - w.at < this.windowMs);
    wastes.push({ cause: waste.cause, payer: waste.payer.toLowerCase(), at });
    setNewest(this.#assetWastes, key, wastes, REMEMBERED);
  }

  /** A settlement landed with its Transfer: its asset is known, and its payer has one more. */
  settled(chainId: number, payer: string, asset: string, now = Date.now()): void {
    setNewest(this.#known, assetKey(chainId, asset), true, KNOWN_REMEMBERED);
    const key = payerKey(chainId, payer);
    const landed = this.#landed.get(key) ?? [];
    landed.push(now);
    if (landed.length > this.#throttle.limit) landed.shift();
    setNewest(this.#landed, key, landed, KNOWN_REMEMBERED);
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
    const wasted = sumGas(events, this.#held(chainId, now));
    if (wasted < budget) return undefined;
    const spent = `settlements on ${caip2(chainId)} wasted ${grouped(wasted)} gas in the last ${this.#minutes()} min (reverted, ran out of gas or moved nothing)`;
    // (Nothing wasted refuses no one with a history, even under a budget of 0.)
    if (wasted >= 2n * budget && wasted > 0n) {
      const seconds = this.#secondsUntil(events, 2n * budget, wasted, now);
      return failure(
        "payer_throttled",
        `${spent}, at least twice the budget of ${grouped(budget)}; every payer is refused for ${seconds} s`,
        { retryAfterSeconds: seconds },
      );
    }
    const lower = payer.toLowerCase();
    const own = events.filter((e) => e.payer === lower);
    const allowance = await this.#allowance(chainId, payer, own.length, now);
    if (own.length < allowance) return undefined;
    // Free again once the chain is under its budget, or enough of its own waste aged out.
    let freeIn = this.#secondsUntil(events, budget, wasted, now);
    const oldest = own[own.length - allowance];
    if (allowance > 0 && oldest) {
      freeIn = Math.min(freeIn, secondsTill(oldest.at + this.windowMs, now));
    }
    return failure(
      "payer_throttled",
      allowance === 0
        ? `${spent}, over the budget of ${grouped(budget)}; payers with no settlement here yet are refused for ${freeIn} s`
        : `${spent}, over the budget of ${grouped(budget)}; past it a payer is served while it wasted fewer settlements than it has landed here (counting at most ${this.#throttle.limit}): ${payer} has ${allowance} and wasted ${own.length}, its settles are refused for ${freeIn} s`,
      { retryAfterSeconds: freeIn },
    );
  }

  /** Wastes allowed past the budget: one per landed settlement, at most the throttle's limit. */
  async #allowance(chainId: number, payer: string, ownWaste: number, now: number) {
    const limit = this.#throttle.limit;
    const key = payerKey(chainId, payer);
    const since = now - SETTLEMENTS_LOOKBACK_MS;
    const here = (this.#landed.get(key) ?? []).filter((at) => at > since).length;
    if (here > ownWaste) return Math.min(here, limit);
    if ((this.#countedFull.get(key) ?? 0) > now) return limit;
    // A store that does not answer counts nothing: past the budget, in doubt, we do not send.
    const counted =
      (await this.#options.settlementsOf?.(chainId, { payer }, limit).catch(() => 0)) ?? 0;
    if (counted >= limit) setNewest(this.#countedFull, key, now + this.windowMs, KNOWN_REMEMBERED);
    return Math.min(Math.max(here, counted), limit);
  }

  #secondsUntil(events: readonly Event[], level: bigint, wasted: bigint, now: number): number {
    let left = wasted;
    let freeAt = now;
    for (const e of events) {
      if (left < level) break;
      left -= e.gas;
      freeAt = e.at + this.windowMs;
    }
    return secondsTill(freeAt, now);
  }

  async #assetRefusal(chainId: number, asset: string, now: number) {
    const key = assetKey(chainId, asset);
    const wastes = this.#assetWastes.get(key)?.filter((w) => now - w.at < this.windowMs);
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
      const [fresh, settled, what] = ASSET_LIMITS[cause];
      if (n < fresh) continue;
      known ??= await this.#isKnown(chainId, asset);
      if (n < (known ? settled : fresh)) continue;
      const seconds = secondsTill(last + this.windowMs, now);
      return failure(
        "asset_throttled",
        `settlements with asset ${getAddress(asset)} on ${caip2(chainId)} ${what} ${n} time${n === 1 ? "" : "s"}${cause === "reverted" ? " (for different payers)" : ""} in the last ${this.#minutes()} min; it is refused for ${seconds} s`,
        { retryAfterSeconds: seconds },
      );
    }
    return undefined;
  }

  async #isKnown(chainId: number, asset: string): Promise<boolean> {
    const key = assetKey(chainId, asset);
    if (this.#known.has(key)) return true;
    if (this.#options.trusted?.(chainId, asset)) return true;
    const counted = await this.#options.settlementsOf?.(chainId, { asset }, 1).catch(() => 0);
    if (counted) this.#known.set(key, true);
    return !!counted;
  }

  #recent(chainId: number, now: number): Event[] {
    const events = this.#wasted.get(chainId) ?? [];
    const first = events.findIndex((e) => now - e.at < this.windowMs);
    if (first !== 0) events.splice(0, first === -1 ? events.length : first);
    if (events.length === 0) this.#wasted.delete(chainId);
    else this.#wasted.set(chainId, events);
    return events;
  }

  /** Gas at risk on `chainId`; what was held longer than the window is forgotten. */
  #held(chainId: number, now: number): bigint {
    let held = 0n;
    for (const [id, h] of this.#atRisk) {
      if (now - h.at >= this.windowMs) this.#atRisk.delete(id);
      else if (h.chainId === chainId) held += h.waste.gas;
    }
    return held;
  }

  #minutes(): number {
    return Math.round(this.windowMs / 60_000);
  }
}

/** Whole seconds (at least one) from `now` until `at`, both in ms. */
const secondsTill = (at: number, now: number) => Math.max(1, Math.ceil((at - now) / 1000));
const sumGas = (events: readonly Event[], from: bigint) => events.reduce((s, e) => s + e.gas, from);
const payerKey = (chainId: number, payer: string) => `${chainId}:p:${payer.toLowerCase()}`;
const assetKey = (chainId: number, asset: string) => `${chainId}:a:${asset.toLowerCase()}`;

/** Gas a transaction of ours without a payment wasted, charged in equal shares to whose doing it is. */
export function chargeWaste(
  ctx: { readonly chainId: number; readonly gasAtRisk: GasAtRisk },
  chargeTo: readonly Chargeable[],
  receipt: TransactionReceipt,
): void {
  if (chargeTo.length === 0) return;
  const share = receipt.gasUsed / BigInt(chargeTo.length);
  for (const { payer, asset } of chargeTo) {
    ctx.gasAtRisk.charge(ctx.chainId, { payer, asset, gas: share, cause: "reverted" });
  }
}
