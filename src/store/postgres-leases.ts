/**
 * Signer leases in a shared store: each settlement key is leased to the one replica that sends
 * from it (its nonces are that replica's to count), renewed a third of a lease at a time. A lease
 * found taken by another replica is lost for good: this replica no longer sends from that key.
 */
import type { Address } from "viem";
import { FacilitatorError } from "../protocol/errors.js";
import type { Query } from "./postgres-query.js";

export class SignerLeases {
  readonly #query: Query;
  readonly #owner: string;
  readonly #signers: readonly Address[];
  readonly #leaseMs: number;
  /** Signers whose lease this replica lost (it stalled, or the store was away too long). */
  readonly lost = new Set<string>();

  constructor(query: Query, owner: string, signers: readonly Address[], leaseMs: number) {
    this.#query = query;
    this.#owner = owner;
    this.#signers = signers;
    this.#leaseMs = leaseMs;
  }

  /** Takes the lease on each signer; waits out another owner's for up to `waitMs`. */
  async take(waitMs: number): Promise<void> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const held = await this.#tryTake();
      const missing = this.#signers.filter((a) => !held.has(a));
      if (missing.length === 0) return;
      if (Date.now() >= deadline) {
        const { rows } = await this.#query<{ address: string; owner: string }>(
          "signers",
          "SELECT address, owner FROM facilitator_signers WHERE address = ANY($1)",
          [missing],
        );
        const who = rows.map((r) => `${r.address} (held by ${r.owner})`).join(", ");
        throw FacilitatorError.of(
          "settlement_failed",
          `signer ${who} is in use by another replica on this store; give each replica its own key`,
          { status: 500 },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /** Renews the leases; one found taken by another replica is lost. */
  async renew(): Promise<void> {
    const held = await this.#tryTake();
    for (const address of this.#signers) if (!held.has(address)) this.lost.add(address);
  }

  async #tryTake(): Promise<Set<string>> {
    if (this.#signers.length === 0) return new Set();
    const { rows } = await this.#query<{ address: string }>(
      "lease",
      `INSERT INTO facilitator_signers (address, owner, expires_at)
         SELECT a, $2, now() + $3 * interval '1 millisecond' FROM unnest($1::text[]) AS a
       ON CONFLICT (address) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
         WHERE facilitator_signers.owner = EXCLUDED.owner OR facilitator_signers.expires_at < now()
       RETURNING address`,
      [this.#signers, this.#owner, this.#leaseMs],
    );
    return new Set(rows.map((r) => r.address));
  }
}
