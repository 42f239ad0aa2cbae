/**
 * A journal entry as the EVM code reads it. The store keeps core/store.ts's chain-neutral strings;
 * on an `eip155` network this family wrote them as 0x hex (addresses, hashes, signed bytes), so
 * they read back as viem's types.
 */
import type { Address, Hex } from "viem";
import type { ExpectedTransfer, JournalEntry } from "../../core/store.js";

export interface EvmTransfer extends ExpectedTransfer {
  readonly token: Address;
  readonly from: Address;
  readonly to: Address;
}

export interface EvmEntry extends JournalEntry {
  readonly signer: Address;
  readonly expect?: EvmTransfer | undefined;
  hashes: Hex[];
  raws: Hex[];
}

/** `entry`, of a network this family owns, as the EVM code reads it. */
export const evmEntry = (entry: JournalEntry): EvmEntry => entry as EvmEntry;

/** An expected transfer this family wrote, as the EVM code reads it. */
export const evmTransfer = (expect: ExpectedTransfer): EvmTransfer => expect as EvmTransfer;
