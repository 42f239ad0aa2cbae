/**
 * Address lookup tables: a v0 message may name accounts through tables on chain instead of in its
 * static keys. The official @x402/svm 2.27 facilitator resolves them (its signer's
 * fetchAddressLookupTables) and checks the resolved transaction; so do we, bounded: at most
 * MAX_LOOKUP_TABLES tables and MAX_LOOKUP_ACCOUNTS accounts loaded through them, else refused
 * before any table is read.
 *
 * A table's account (the program's documented layout): a u32 state tag (1: a lookup table), then
 * its meta (deactivation slot u64, last extended slot u64, that extension's start index u8, an
 * optional authority: a u8 tag and 32 bytes, 2 bytes of padding), 56 bytes in all, then its
 * addresses, 32 bytes each. A table only grows, and what it holds at an index never changes while
 * it can be used (one closed cannot be made again at its address), so what verify resolves is
 * what the transaction loads when it lands; a table deactivated since is refused by the cluster,
 * and the transaction then never lands (no fee is paid).
 *
 * Resolved accounts follow the static keys in the runtime's order: every table's writable lookups,
 * then every table's read-only ones.
 */

import { getBase58Decoder } from "@solana/kit";
import type { Client } from "viem";
import {
  ADDRESS_LOOKUP_TABLE_PROGRAM,
  MAX_LOOKUP_ACCOUNTS,
  MAX_LOOKUP_TABLES,
} from "./constants.js";
import type { SvmInstruction, SvmTransaction } from "./decode.js";

const META_SIZE = 56;
const LOOKUP_TABLE_STATE = 1;
const base58 = getBase58Decoder();

export interface LookupTableAccount {
  readonly addresses: readonly string[];
  /** u64::MAX while the table is active. */
  readonly deactivationSlot: bigint;
  readonly lastExtendedSlot: bigint;
  readonly lastExtendedSlotStartIndex: number;
  readonly authority: string | null;
}

/** A table's account data, or undefined when it is not a lookup table's. */
export function decodeLookupTable(data: Uint8Array): LookupTableAccount | undefined {
  if (data.length < META_SIZE || (data.length - META_SIZE) % 32 !== 0) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (view.getUint32(0, true) !== LOOKUP_TABLE_STATE) return undefined;
  const hasAuthority = data[21];
  if (hasAuthority !== 0 && hasAuthority !== 1) return undefined;
  const addresses: string[] = [];
  for (let at = META_SIZE; at < data.length; at += 32) {
    addresses.push(base58.decode(data.subarray(at, at + 32)));
  }
  return {
    addresses,
    deactivationSlot: view.getBigUint64(4, true),
    lastExtendedSlot: view.getBigUint64(12, true),
    lastExtendedSlotStartIndex: data[20] as number,
    authority: hasAuthority === 1 ? base58.decode(data.subarray(22, 54)) : null,
  };
}

/** A table the cluster does not have, or an account that is not a lookup table. */
export class LookupTableUnreadable extends Error {}

/** Reads tables from the cluster: each one's addresses, by table address. */
export type LookupTableReader = (
  tables: readonly string[],
) => Promise<ReadonlyMap<string, readonly string[]>>;

/**
 * The reader over JSON-RPC (getMultipleAccounts, base64, at `confirmed` as verify simulates).
 * Throws LookupTableUnreadable for a table the cluster lacks or an account of another kind; a
 * node that cannot be asked throws as it is (not the payment's fault).
 */
export function rpcLookupTableReader(client: Client): LookupTableReader {
  return async (tables) => {
    const answer = (await client.request({
      method: "getMultipleAccounts",
      params: [tables, { encoding: "base64", commitment: "confirmed" }],
    } as never)) as { value?: ({ owner?: unknown; data?: unknown } | null)[] };
    const found = new Map<string, readonly string[]>();
    for (const [i, table] of tables.entries()) {
      const account = answer?.value?.[i];
      if (!account) throw new LookupTableUnreadable(`the cluster has no account ${table}`);
      const data = Array.isArray(account.data) ? account.data[0] : undefined;
      const decoded =
        account.owner === ADDRESS_LOOKUP_TABLE_PROGRAM && typeof data === "string"
          ? decodeLookupTable(Buffer.from(data, "base64"))
          : undefined;
      if (!decoded)
        throw new LookupTableUnreadable(`account ${table} is not an address lookup table`);
      found.set(table, decoded.addresses);
    }
    return found;
  };
}

export type Resolution =
  | { readonly ok: true; readonly transaction: SvmTransaction }
  | {
      readonly ok: false;
      /** over-cap: past MAX_LOOKUP_*; unreadable: a table missing or not one; index: past a table's end or the keys. */
      readonly why: "over-cap" | "unreadable" | "index";
      readonly message: string;
    };

/** The transaction with every account its lookups load read from the tables. */
export async function resolveLookupTables(
  tx: SvmTransaction,
  read: LookupTableReader,
): Promise<Resolution> {
  const loads = tx.lookups.reduce(
    (n, l) => n + l.writableIndexes.length + l.readonlyIndexes.length,
    0,
  );
  if (tx.lookups.length > MAX_LOOKUP_TABLES || loads > MAX_LOOKUP_ACCOUNTS) {
    return {
      ok: false,
      why: "over-cap",
      message: `The transaction loads ${loads} accounts through ${tx.lookups.length} address lookup tables; this facilitator resolves at most ${MAX_LOOKUP_TABLES} tables and ${MAX_LOOKUP_ACCOUNTS} accounts`,
    };
  }
  let tables: ReadonlyMap<string, readonly string[]>;
  try {
    tables = await read([...new Set(tx.lookups.map((l) => l.table))]);
  } catch (error) {
    if (!(error instanceof LookupTableUnreadable)) throw error;
    return {
      ok: false,
      why: "unreadable",
      message: `An address lookup table cannot be resolved: ${error.message}`,
    };
  }
  const writable: string[] = [];
  const readonly: string[] = [];
  for (const lookup of tx.lookups) {
    const addresses = tables.get(lookup.table) ?? [];
    for (const [into, indexes] of [
      [writable, lookup.writableIndexes],
      [readonly, lookup.readonlyIndexes],
    ] as const) {
      for (const index of indexes) {
        const address = addresses[index];
        if (address === undefined) {
          return {
            ok: false,
            why: "index",
            message: `The transaction looks up index ${index} of address lookup table ${lookup.table}, which holds ${addresses.length} addresses`,
          };
        }
        into.push(address);
      }
    }
  }
  const keys = [...tx.staticAccounts, ...writable, ...readonly];
  const instructions: SvmInstruction[] = [];
  for (const ix of tx.instructions) {
    const accounts = ix.accountIndexes.map((index) => keys[index]);
    const past = ix.accountIndexes.find((index) => keys[index] === undefined);
    if (past !== undefined) {
      return {
        ok: false,
        why: "index",
        message: `Instruction ${ix.index} names account ${past}; the transaction has ${keys.length}`,
      };
    }
    instructions.push({ ...ix, accounts: accounts as string[] });
  }
  return {
    ok: true,
    transaction: { ...tx, instructions, loadedAccounts: [...writable, ...readonly] },
  };
}
