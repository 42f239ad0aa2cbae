/** Devnet slots: height = slot, `confirmed` 1 and `finalized` 32 behind, blockhashes valid 150. */
import type { Commitment } from "../exact/rpc.js";

/** How many slots behind the newest each commitment sees. */
const DEPTH = { processed: 0n, confirmed: 1n, finalized: 32n } as const;
const BLOCKHASH_VALIDITY = 150;

export class SlotClock {
  #slot: bigint;
  /** blockhash → the slot it was produced in; only the last BLOCKHASH_VALIDITY + 1 kept. */
  readonly #blockhashSlot = new Map<string, bigint>();
  /** slot → blockhash, same window. */
  readonly #slotBlockhash = new Map<bigint, string>();

  constructor(startSlot: bigint, firstBlockhash: string) {
    this.#slot = startSlot;
    this.#record(startSlot, firstBlockhash);
  }

  /** The newest slot (processed). */
  get slot(): bigint {
    return this.#slot;
  }

  /** Moves to the next slot, produced with `blockhash`. */
  advance(blockhash: string): bigint {
    this.#slot += 1n;
    this.#record(this.#slot, blockhash);
    return this.#slot;
  }

  /** The newest slot at `commitment`. */
  slotAt(commitment: Commitment): bigint {
    const slot = this.#slot - DEPTH[commitment];
    return slot < this.#oldestSlot() ? this.#oldestSlot() : slot;
  }

  /** The blockhash of the newest block at `commitment` and the last block height it is valid at. */
  latestBlockhash(commitment: Commitment): { blockhash: string; lastValidBlockHeight: bigint } {
    const slot = this.slotAt(commitment);
    const blockhash = this.#slotBlockhash.get(slot);
    if (blockhash === undefined) throw new Error(`no blockhash kept for slot ${slot}`);
    return { blockhash, lastValidBlockHeight: slot + BigInt(BLOCKHASH_VALIDITY) };
  }

  /** Whether a transaction using `blockhash` may still land now. */
  isBlockhashValid(blockhash: string): boolean {
    const slot = this.#blockhashSlot.get(blockhash);
    return slot !== undefined && this.#slot <= slot + BigInt(BLOCKHASH_VALIDITY);
  }

  /** How a transaction that landed in `slot` stands now. */
  statusOf(slot: bigint): { confirmationStatus: Commitment; confirmations: number | null } {
    const depth = this.#slot - slot;
    if (depth >= DEPTH.finalized) return { confirmationStatus: "finalized", confirmations: null };
    return {
      confirmationStatus: depth >= DEPTH.confirmed ? "confirmed" : "processed",
      confirmations: Number(depth),
    };
  }

  /** Slots are recorded in order: the first kept is the oldest. */
  #oldestSlot(): bigint {
    return this.#slotBlockhash.keys().next().value ?? this.#slot;
  }

  #record(slot: bigint, blockhash: string): void {
    this.#blockhashSlot.set(blockhash, slot);
    this.#slotBlockhash.set(slot, blockhash);
    const expired = slot - BigInt(BLOCKHASH_VALIDITY) - 1n;
    const old = this.#slotBlockhash.get(expired);
    if (old !== undefined) {
      this.#slotBlockhash.delete(expired);
      this.#blockhashSlot.delete(old);
    }
  }
}
