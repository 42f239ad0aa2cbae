/**
 * Who settled with us, as the journal remembers it: per payer and per asset, its newest
 * settlements answered success, kept past the entries themselves (chain/gas-at-risk.ts asks).
 */
import { setNewest } from "../core/newest.js";
import { type ExpectedTransfer, SETTLEMENTS_LOOKBACK_MS } from "../core/store.js";

/** Payers and assets remembered; past it the least recently settled are forgotten... */
const REMEMBERED = 100_000;
/** ...and the newest settlements of each counted (more than any payer's allowance needs). */
const KEPT_EACH = 16;

export class SettledBy {
  readonly #settled = new Map<string, { key: string; at: number }[]>();

  /** Settlement `key` of `expect`'s payer and asset on `chainId` was answered success at `at`. */
  remember(chainId: number, key: string, expect: ExpectedTransfer, at: number): void {
    for (const who of [`${chainId}:p:${expect.from}`, `${chainId}:a:${expect.token}`]) {
      const lower = who.toLowerCase();
      const settled = this.#settled.get(lower) ?? [];
      // Answered again after a lost hand-over (landed, then answered): still one settlement.
      if (!settled.some((s) => s.key === key)) settled.push({ key, at });
      if (settled.length > KEPT_EACH) settled.shift();
      setNewest(this.#settled, lower, settled, REMEMBERED);
    }
  }

  /** As `SettlementStore.settlementsOf`, and up to the newest `KEPT_EACH` of each. */
  count(chainId: number, who: { payer: string } | { asset: string }, atMost: number): number {
    const key = "payer" in who ? `${chainId}:p:${who.payer}` : `${chainId}:a:${who.asset}`;
    const settled = this.#settled.get(key.toLowerCase()) ?? [];
    const since = "payer" in who ? Date.now() - SETTLEMENTS_LOOKBACK_MS : Number.NEGATIVE_INFINITY;
    return Math.min(atMost, settled.filter((s) => s.at > since).length);
  }
}
