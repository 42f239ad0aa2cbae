/**
 * Whether a landed transaction paid: its confirmed copy (getTransaction) shows a TransferChecked
 * of the mint, of at least the amount, into the payee's token account, authorised by none of our
 * fee payers, at the top level or among its inner instructions. A smart-wallet payment was judged
 * on a simulation; the chain may run it otherwise (its state changed between the two), so its
 * success waits for this. The reference reads the inner instructions only (a transfer at the top
 * level never counts there), and falls back to a balance difference; ours reads both levels.
 */
import type { Client } from "viem";
import type { ExpectedTransfer } from "../../core/store.js";
import { decodeSvmTransaction, LOOKUP_TABLE_ACCOUNT, type SvmTransaction } from "./decode.js";
import { resolveLookupTables, rpcLookupTableReader } from "./lookup-tables.js";
import { confirmedTransaction } from "./rpc.js";
import { type FoundTransfer, innerTransfers, topLevelTransfers } from "./transfers.js";

/** What a settlement must have moved. */
export interface Owed {
  readonly mint: string;
  readonly destination: string;
  readonly amount: bigint;
}

/** paid / unpaid: the confirmed transaction says; unknown: the node has no copy of it yet. */
export type Paid = "paid" | "unpaid" | "unknown";

/** The journal's expected transfer, as owed. */
export function owedOf(expect: ExpectedTransfer): Owed {
  return { mint: expect.token, destination: expect.to, amount: BigInt(expect.value) };
}

/** How often getTransaction is asked before the answer is "unknown", and the waits between. */
const ASKS = 3;
const WAIT_MS = 150;

export async function transferLanded(
  client: Client,
  signature: string,
  owed: Owed,
  feePayers: readonly string[],
): Promise<Paid> {
  let confirmed = await confirmedTransaction(client, signature);
  for (let ask = 1; !confirmed && ask < ASKS; ask++) {
    await new Promise((resolve) => setTimeout(resolve, WAIT_MS * ask));
    confirmed = await confirmedTransaction(client, signature);
  }
  if (!confirmed) return "unknown";
  if (confirmed.err !== null) return "unpaid";
  const decoded = decodeSvmTransaction(confirmed.wire);
  if (!decoded.ok) return "unknown";
  const tx = await withLoadedAccounts(client, decoded.transaction, confirmed.loadedAddresses);
  if (!tx) return "unknown";
  const keys = [...tx.staticAccounts, ...tx.loadedAccounts];
  const transfers = [
    ...topLevelTransfers(tx),
    ...innerTransfers(confirmed.innerInstructions, keys),
  ];
  return transfers.some((t) => pays(t, owed, feePayers)) ? "paid" : "unpaid";
}

/**
 * Whether the transaction's own top-level instructions pay `owed` from keys it names itself: a
 * transaction that landed without error then paid, with no need to read it back (the static
 * layout's payments).
 */
export function paysAtTopLevel(wire: string, owed: Owed, feePayers: readonly string[]): boolean {
  const decoded = decodeSvmTransaction(wire);
  if (!decoded.ok) return false;
  return topLevelTransfers(decoded.transaction).some(
    (t) => t.destination !== LOOKUP_TABLE_ACCOUNT && pays(t, owed, feePayers),
  );
}

function pays(t: FoundTransfer, owed: Owed, feePayers: readonly string[]): boolean {
  return (
    t.mint === owed.mint &&
    t.destination === owed.destination &&
    t.amount >= owed.amount &&
    !feePayers.includes(t.authority)
  );
}

/**
 * The transaction with the accounts its lookup tables loaded: as the node lists them, else read
 * from the tables (what a table holds at an index never changes while it can be used).
 */
async function withLoadedAccounts(
  client: Client,
  tx: SvmTransaction,
  loaded: { readonly writable: unknown; readonly readonly: unknown } | undefined,
): Promise<SvmTransaction | undefined> {
  if (tx.lookupTableCount === 0) return tx;
  const wanted = tx.lookups.reduce(
    (n, l) => n + l.writableIndexes.length + l.readonlyIndexes.length,
    0,
  );
  const listed = [
    ...(Array.isArray(loaded?.writable) ? loaded.writable : []),
    ...(Array.isArray(loaded?.readonly) ? loaded.readonly : []),
  ].map(String);
  if (listed.length === wanted) {
    const keys = [...tx.staticAccounts, ...listed];
    const instructions = tx.instructions.map((ix) => ({
      ...ix,
      accounts: ix.accountIndexes.map((i) => keys[i] ?? LOOKUP_TABLE_ACCOUNT),
    }));
    return { ...tx, instructions, loadedAccounts: listed };
  }
  const resolved = await resolveLookupTables(tx, rpcLookupTableReader(client));
  return resolved.ok ? resolved.transaction : undefined;
}
