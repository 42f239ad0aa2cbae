/** A settlement as the PostgreSQL store's row holds it, and as the store port names it. */
import type { EntryState, JournalEntry, RawTx, TxHash } from "../core/store.js";

export interface Row {
  key: string;
  network: string;
  signer: string;
  tx_nonce: string;
  expect: JournalEntry["expect"] | null;
  action: JournalEntry["action"] | null;
  hashes: TxHash[];
  raws: RawTx[];
  state: EntryState;
  owner: string | null;
  updated_at: Date | null;
}

export function entryOf(row: Row): JournalEntry {
  return {
    key: row.key,
    network: row.network,
    signer: row.signer,
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
