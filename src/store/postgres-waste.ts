/**
 * Reverts and gas wasted, shared: each written for the other replicas' gas at risk, theirs read
 * with the lease renewal; and how often a payer or asset settled with us.
 */
import { type Network, SETTLEMENTS_LOOKBACK_MS, type Waste } from "../core/store.js";
import type { Query } from "./postgres-query.js";

/** A payer's settlements answered lately: one range of its index (schema.ts, migration 18). */
export const PAYER_SETTLEMENTS = `SELECT 1 FROM facilitator_settlements
  WHERE network = $1 AND lower(expect->>'from') = $2 AND state = 'answered'
    AND updated_at > now() - $4 * interval '1 millisecond' LIMIT $3`;
/** An asset's settlements answered ever (its index: migration 18). */
const ASSET_SETTLEMENTS = `SELECT 1 FROM facilitator_settlements
  WHERE network = $1 AND lower(expect->>'token') = $2 AND state = 'answered' LIMIT $3`;

export type RevertListener = (chainId: number, payer: string, at: number, waste?: Waste) => void;

export class SharedWaste {
  readonly #listeners: RevertListener[] = [];
  /** The newest revert row passed on; from 0, the first look reads the last day's. */
  #seen = "0";

  constructor(
    private readonly query: Query,
    private readonly owner: string,
  ) {}

  async charge(chainId: number, payer: string, waste?: Waste): Promise<void> {
    await this.query(
      "revert",
      `INSERT INTO facilitator_payer_reverts (chain_id, payer, owner, asset, gas, cause)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        chainId,
        payer.toLowerCase(),
        this.owner,
        waste?.asset.toLowerCase() ?? null,
        waste?.gas.toString() ?? null,
        waste?.cause ?? null,
      ],
    ).catch(() => undefined);
  }

  listen(listener: RevertListener): void {
    this.#listeners.push(listener);
  }

  async settlementsOf(
    network: Network,
    who: { payer: string } | { asset: string },
    atMost: number,
  ): Promise<number> {
    const [text, whose, ...since] =
      "payer" in who
        ? [PAYER_SETTLEMENTS, who.payer, SETTLEMENTS_LOOKBACK_MS]
        : [ASSET_SETTLEMENTS, who.asset];
    const values = [network, whose.toLowerCase(), atMost, ...since];
    return (await this.query("settlements-of", text, values)).rows.length;
  }

  /** Passes on the reverts other replicas charged since the last look. */
  async pull(): Promise<void> {
    if (this.#listeners.length === 0) return;
    const { rows } = await this.query<{
      id: string;
      chain_id: string;
      payer: string;
      owner: string;
      at: Date;
      asset: string | null;
      gas: string | null;
      cause: Waste["cause"] | null;
    }>(
      "reverts",
      `SELECT id, chain_id, payer, owner, at, asset, gas, cause FROM facilitator_payer_reverts
        WHERE id > $1 AND at > now() - interval '1 day' ORDER BY id`,
      [this.#seen],
    );
    for (const row of rows) {
      this.#seen = row.id;
      if (row.owner === this.owner) continue;
      const waste =
        row.asset !== null && row.gas !== null && row.cause !== null
          ? { payer: row.payer, asset: row.asset, gas: BigInt(row.gas), cause: row.cause }
          : undefined;
      for (const listener of this.#listeners) {
        listener(Number(row.chain_id), row.payer, row.at.getTime(), waste);
      }
    }
  }
}
