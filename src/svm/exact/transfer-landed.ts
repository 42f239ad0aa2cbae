/** Whether a landed transaction paid, by none of our fee payers: a smart wallet was judged on a
 * simulation, and the chain may run it otherwise. */
import type { Client } from "viem";
import type { ExpectedTransfer } from "../../core/store.js";
import { decodeSvmTransaction, LOOKUP_TABLE_ACCOUNT, type SvmTransaction } from "./decode.js";
import type { TokenTransfer } from "./instructions.js";
import {
  lookupLoads,
  resolveLookupTables,
  rpcLookupTableReader,
  withLoaded,
} from "./lookup-tables.js";
import { confirmedTransaction } from "./rpc.js";
import { transfersOf } from "./transfers.js";
import type { SvmPayment } from "./types.js";

/** What a settlement must have moved. */
type Owed = Pick<SvmPayment, "mint" | "destination" | "amount">;

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
  const transfers = transfersOf(tx, confirmed.innerInstructions);
  return transfers.some((t) => pays(t, owed, feePayers)) ? "paid" : "unpaid";
}

/** Whether its own top-level instructions pay `owed` (then landing without error is paying). */
export function paysAtTopLevel(wire: string, owed: Owed, feePayers: readonly string[]): boolean {
  const decoded = decodeSvmTransaction(wire);
  if (!decoded.ok) return false;
  return transfersOf(decoded.transaction, null).some(
    (t) => t.destination !== LOOKUP_TABLE_ACCOUNT && pays(t, owed, feePayers),
  );
}

function pays(t: TokenTransfer, owed: Owed, feePayers: readonly string[]): boolean {
  return (
    t.mint === owed.mint &&
    t.destination === owed.destination &&
    t.amount >= owed.amount &&
    !feePayers.includes(t.authority)
  );
}

/** The transaction with the accounts its tables loaded: as the node lists them, else read. */
async function withLoadedAccounts(
  client: Client,
  tx: SvmTransaction,
  loaded: { readonly writable: unknown; readonly readonly: unknown } | undefined,
): Promise<SvmTransaction | undefined> {
  if (tx.lookupTableCount === 0) return tx;
  const listed = [
    ...(Array.isArray(loaded?.writable) ? loaded.writable : []),
    ...(Array.isArray(loaded?.readonly) ? loaded.readonly : []),
  ].map(String);
  if (listed.length === lookupLoads(tx)) {
    const known = withLoaded(tx, listed);
    if (known.ok) return known.transaction;
  }
  const resolved = await resolveLookupTables(tx, rpcLookupTableReader(client));
  return resolved.ok ? resolved.transaction : undefined;
}
