/**
 * Signer leases: each key's nonces are counted by the one replica that holds its lease. A lease
 * found taken by another is lost for good: this replica no longer sends from that key.
 */
import type { Query } from "./postgres-query.js";

/** A signer's lease held by another owner: who, and until when unless it is renewed. */
export interface SignerLease {
  readonly address: string;
  readonly owner: string;
  readonly until: Date;
}

/** What a replica waits for at start-up: the leases others hold on its signers, and how long. */
export interface SignerWait {
  readonly leases: readonly SignerLease[];
  readonly waitMs: number;
}

/** The leases were still held by their owners when the wait ran out: those replicas run. */
export class SignersLeased extends Error {
  override readonly name = "SignersLeased";
  constructor(
    readonly leases: readonly SignerLease[],
    readonly waitedMs: number,
  ) {
    const who = leases.map((l) => `${l.address} (leased by ${l.owner})`).join(", ");
    super(
      `signer ${who} is still leased by another replica on this store after ${Math.round(waitedMs / 1000)} s; give each replica its own key`,
    );
  }
}

export class SignerLeases {
  /** Signers whose lease this replica lost (it stalled, or the store was away too long). */
  readonly lost = new Set<string>();

  constructor(
    private readonly query: Query,
    private readonly owner: string,
    private readonly signers: readonly string[],
    private readonly leaseMs: number,
  ) {}

  /** Takes each signer's lease, waiting up to `waitMs` for a stopped replica's (told to `onWait`). */
  async take(waitMs: number, onWait?: (wait: SignerWait) => void): Promise<void> {
    const started = Date.now();
    const deadline = started + waitMs;
    let told = false;
    for (;;) {
      const held = await this.#tryTake();
      const missing = this.signers.filter((a) => !held.has(a));
      if (missing.length === 0) return;
      const now = Date.now();
      if (now >= deadline) throw new SignersLeased(await this.#leasesOf(missing), now - started);
      if (!told && onWait) {
        told = true;
        onWait({ leases: await this.#leasesOf(missing), waitMs: deadline - now });
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /** Renews the leases; one found taken by another replica is lost. */
  async renew(): Promise<void> {
    const held = await this.#tryTake();
    for (const address of this.signers) if (!held.has(address)) this.lost.add(address);
  }

  async #leasesOf(addresses: readonly string[]): Promise<SignerLease[]> {
    const { rows } = await this.query<{ address: string; owner: string; expires_at: Date }>(
      "signers",
      "SELECT address, owner, expires_at FROM facilitator_signers WHERE address = ANY($1) ORDER BY address",
      [addresses],
    );
    return rows.map((r) => ({ address: r.address, owner: r.owner, until: new Date(r.expires_at) }));
  }

  async #tryTake(): Promise<Set<string>> {
    if (this.signers.length === 0) return new Set();
    const { rows } = await this.query<{ address: string }>(
      "lease",
      `INSERT INTO facilitator_signers (address, owner, expires_at)
         SELECT a, $2, now() + $3 * interval '1 millisecond' FROM unnest($1::text[]) AS a
       ON CONFLICT (address) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
         WHERE facilitator_signers.owner = EXCLUDED.owner OR facilitator_signers.expires_at < now()
       RETURNING address`,
      [this.signers, this.owner, this.leaseMs],
    );
    return new Set(rows.map((r) => r.address));
  }
}
