/** Lookup tables resolved as @x402/svm 2.27 does, capped before any read. An index's address never
 * changes while the table is usable: what verify resolves is what lands. */
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

/** A lookup table's account data: u32 state (1), 56 bytes of meta, then 32-byte addresses. */
export function decodeLookupTable(data: Uint8Array) {
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
class LookupTableUnreadable extends Error {}

/** Reads tables from the cluster: each one's addresses, by table address. */
export type LookupTableReader = (
  tables: readonly string[],
) => Promise<ReadonlyMap<string, readonly string[]>>;

/** The reader over getMultipleAccounts; LookupTableUnreadable for a missing or foreign account. */
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
  const loads = lookupLoads(tx);
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
  return withLoaded(tx, [...writable, ...readonly]);
}

/** How many accounts the transaction's lookups load. */
export function lookupLoads(tx: SvmTransaction): number {
  return tx.lookups.reduce((n, l) => n + l.writableIndexes.length + l.readonlyIndexes.length, 0);
}

/** The transaction with `loaded` (the runtime's order) after its static keys. */
export function withLoaded(tx: SvmTransaction, loaded: readonly string[]): Resolution {
  const keys = [...tx.staticAccounts, ...loaded];
  const instructions: SvmInstruction[] = [];
  for (const ix of tx.instructions) {
    const past = ix.accountIndexes.find((index) => keys[index] === undefined);
    if (past !== undefined) {
      return {
        ok: false,
        why: "index",
        message: `Instruction ${ix.index} names account ${past}; the transaction has ${keys.length}`,
      };
    }
    instructions.push({ ...ix, accounts: ix.accountIndexes.map((index) => keys[index] as string) });
  }
  return { ok: true, transaction: { ...tx, instructions, loadedAccounts: [...loaded] } };
}
