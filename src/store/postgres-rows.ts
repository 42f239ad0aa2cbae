/** A settlement as the PostgreSQL store's row holds it, and as the store port names it. */
import type { Address, Hex } from "viem";
import type { EntryState, JournalEntry } from "../core/store.js";

export interface Row {
  key: string;
  chain_id: string;
  signer: string;
  tx_nonce: string;
  expect: JournalEntry["expect"] | null;
  action: JournalEntry["action"] | null;
  hashes: Hex[];
  raws: Hex[];
  state: EntryState;
  owner: string | null;
  updated_at: Date | null;
}

export function entryOf(row: Row): JournalEntry {
  return {
    key: row.key,
    chainId: Number(row.chain_id),
    signer: row.signer as Address,
    txNonce: Number(row.tx_nonce),
    expect: row.expect ?? undefined,
    action: row.action ?? undefined,
    hashes: row.hashes,
    raws: row.raws,
    state: row.state,
    owner: row.owner ?? undefined,
    updatedAt: row.updated_at?.getTime(),
  };
}
