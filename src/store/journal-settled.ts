/** Who settled with us, per payer and asset, kept past the entries (chain/gas-at-risk.ts asks). */
import { arrayBytes, BudgetMap, objectBytes, stringBytes } from "../core/byte-budget.js";
import { setNewest } from "../core/newest.js";
import { type ExpectedTransfer, type Network, SETTLEMENTS_LOOKBACK_MS } from "../core/store.js";

/** Payers and assets remembered; past it the least recently settled are forgotten... */
const REMEMBERED = 100_000;
/** ...and the newest settlements of each counted (more than any payer's allowance needs). */
const KEPT_EACH = 16;
/**
 * ...and bytes: 8 MiB keeps some 15,000 one-time payers (serve's RSS stays under 160 MiB). One
 * forgotten waits while the wasted-gas budget is spent, rather than us.
 */
const BUDGET_BYTES = 8 * 2 ** 20;

type Settled = { key: string; at: number }[];
const bytesOf = (who: string, settled: Settled) =>
  stringBytes(who) +
  arrayBytes(settled.length) +
  settled.reduce((n, s) => n + objectBytes(2) + stringBytes(s.key), 0);

export class SettledBy {
  readonly #settled = new BudgetMap<string, Settled>(BUDGET_BYTES, bytesOf);

  /** Settlement `key` of `expect`'s payer and asset on `network` was answered success at `at`. */
  remember(network: Network, key: string, expect: ExpectedTransfer, at: number): void {
    for (const who of [`${network}:p:${expect.from}`, `${network}:a:${expect.token}`]) {
      const lower = who.toLowerCase();
      const settled = this.#settled.get(lower) ?? [];
      // Answered again after a lost hand-over (landed, then answered): still one settlement.
      if (!settled.some((s) => s.key === key)) settled.push({ key, at });
      if (settled.length > KEPT_EACH) settled.shift();
      setNewest(this.#settled, lower, settled, REMEMBERED);
    }
  }

  /** As `SettlementStore.settlementsOf`, and up to the newest `KEPT_EACH` of each. */
  count(network: Network, who: { payer: string } | { asset: string }, atMost: number): number {
    const key = "payer" in who ? `${network}:p:${who.payer}` : `${network}:a:${who.asset}`;
    const settled = this.#settled.get(key.toLowerCase()) ?? [];
    const since = "payer" in who ? Date.now() - SETTLEMENTS_LOOKBACK_MS : Number.NEGATIVE_INFINITY;
    return Math.min(atMost, settled.filter((s) => s.at > since).length);
  }
}
