/**
 * Settlement signers: a pool of accounts used in turn, each with a nonce lane. Broadcasts from one
 * account are serialized (allocate nonce → sign → journal → send) so nonces never collide or leave
 * gaps; everything slow (gas estimation, receipts) runs outside the lane, in parallel.
 */
import type { Address, LocalAccount, PublicClient } from "viem";

/** A promise chain that runs one task at a time. */
class Lane {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(task, task);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

export class SignerLane {
  readonly account: LocalAccount;
  readonly #lane = new Lane();
  /** Next nonce per chain, learned from the node's pending count and kept locally after that. */
  readonly #next = new Map<number, number>();

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
      if (nonce === undefined) {
        nonce = await client.getTransactionCount({ address: this.address, blockTag: "pending" });
      }
      const { consumed, value } = await send(nonce);
      if (consumed) this.#next.set(chainId, nonce + 1);
      return value;
    });
  }

  /** Forget the cached nonce (after "nonce too low", an RPC outage, a chain reset): re-read it next time. */
  forget(chainId: number): void {
    this.#next.delete(chainId);
  }

  /** The node saw `nonce` used by this account: never hand it out again. */
  observe(chainId: number, nonce: number): void {
    const next = this.#next.get(chainId);
    if (next !== undefined && next <= nonce) this.#next.set(chainId, nonce + 1);
  }

  /** Runs a task inside this account's lane (for re-broadcasting a journaled transaction). */
  exclusive<T>(task: () => Promise<T>): Promise<T> {
    return this.#lane.run(task);
  }
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
