/** A journal entry as the EVM code reads it: on `eip155` networks its strings are 0x hex. */
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

export const evmEntry = (entry: JournalEntry): EvmEntry => entry as EvmEntry;
