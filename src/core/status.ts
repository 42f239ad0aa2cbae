/** What we know of a settlement: the store's record and the chain's word now; nothing is sent. */
import { FacilitatorError, type Failure, failed } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import { notATransactionHash, transactionHash } from "../protocol/transaction-hash.js";
import { firstLine } from "../protocol/words.js";
import type { ChainFamily, Observed } from "./family.js";
import { isPaymentIdentifier, PAYMENT_IDENTIFIER_SHAPE } from "./idempotency.js";
import { ageSecondsOf, type JournalEntry, type SettlementStore } from "./store.js";

export type StatusQuery =
  | { readonly transaction: string }
  | { readonly request: PaymentRequest }
  | { readonly paymentIdentifier: string };

export interface SettlementStatus {
  readonly found: boolean;
  /** What the store holds: the settlement's key and where it stands. */
  readonly key?: string | undefined;
  readonly state?: string | undefined;
  /** In words: written down, sent, landed, answered, failed, dropped. */
  readonly meaning?: string | undefined;
  readonly transactions?: readonly string[] | undefined;
  /** The key that sent it (EVM), and the run of a process that sent or answered it. */
  readonly signer?: string | undefined;
  readonly by?: string | undefined;
  readonly ageSeconds?: number | undefined;
  readonly chain?: Observed | { readonly error: string } | undefined;
  /** Why nothing was found, or what to do. */
  readonly detail?: string | undefined;
}

const MEANING: Readonly<Record<string, string>> = {
  broadcast: "written down and sent; no final answer yet",
  answered: "landed, and its success was answered",
  submitted:
    "sent, and answered submitted (its success handed over); not mined yet: followed until it lands, sent again if dropped",
  landed:
    "landed; its success has not been answered yet: the next settle of the payment answers it",
  failed: "failed: it took nothing",
  dropped: "dropped: its nonce went to another transaction; a settle starts afresh",
};

/** The query with its transaction as stores keep it, or why it names none: junk never reaches a store. */
export function checkStatusQuery(
  query: StatusQuery,
): { ok: true; query: StatusQuery } | { ok: false; failure: Failure } {
  if ("transaction" in query) {
    const transaction = transactionHash(query.transaction);
    return transaction
      ? { ok: true, query: { transaction } }
      : failed("invalid_request", notATransactionHash(query.transaction));
  }
  if ("paymentIdentifier" in query && !isPaymentIdentifier(query.paymentIdentifier)) {
    const given = JSON.stringify(query.paymentIdentifier.slice(0, 140));
    const message = `not a payment-identifier: ${given}; it is ${PAYMENT_IDENTIFIER_SHAPE}`;
    return failed("invalid_request", message);
  }
  return { ok: true, query };
}

/** Throws FacilitatorError invalid_request for a query checkStatusQuery refuses. */
export async function settlementStatus(
  families: readonly ChainFamily[],
  store: SettlementStore,
  asked: StatusQuery,
): Promise<SettlementStatus> {
  const checked = checkStatusQuery(asked);
  if (!checked.ok) throw new FacilitatorError(checked.failure);
  const entry = await find(families, store, checked.query);
  if ("why" in entry) return { found: false, detail: entry.why };
  const family = families.find((f) => f.owns(entry));
  const chain = family
    ? await family.observe(entry).catch((error: unknown) => ({ error: firstLine(error) }))
    : undefined;
  return {
    found: true,
    key: entry.key,
    state: entry.state,
    meaning: MEANING[entry.state],
    transactions: entry.hashes,
    signer: entry.signer,
    by: entry.owner,
    ageSeconds: ageSecondsOf(entry),
    chain,
  };
}

/** The entry the query names, or why none: the store's words for not holding it, or no key. */
async function find(
  families: readonly ChainFamily[],
  store: SettlementStore,
  query: StatusQuery,
): Promise<JournalEntry | { readonly why: string }> {
  if ("transaction" in query) {
    return (await store.findByTransaction(query.transaction)) ?? notHeld(store);
  }
  if ("paymentIdentifier" in query) {
    const answer = (await store.idempotencyAnswer(query.paymentIdentifier)) as
      | { transactionHash?: unknown }
      | undefined;
    const hash = answer?.transactionHash;
    const entry =
      typeof hash === "string" && hash ? await store.findByTransaction(hash) : undefined;
    return entry ?? notHeld(store);
  }
  const network = query.request.requirements.network;
  const family = families.find((f) => f.claims(network));
  if (!family)
    return { why: `cannot tell which settlement it is: no chain family claims "${network}"` };
  const key = await family.settlementKey(query.request);
  if (!key.ok) return { why: `cannot tell which settlement it is: ${key.why}` };
  const entry = store.findArchived ? await store.findArchived(key.key) : await store.get(key.key);
  return entry ?? notHeld(store);
}

/** The journal file or the PostgreSQL store does not hold it: say which, and since when it keeps. */
async function notHeld(store: SettlementStore): Promise<{ readonly why: string }> {
  const since = await store.keptSince?.().catch(() => undefined);
  const older =
    since === undefined
      ? "settled long enough ago to be forgotten"
      : `older than what this store keeps: its oldest settlement kept is from ${new Date(since).toISOString()}`;
  return {
    why: `${store.shared ? "the store" : "the journal"} ${store.where} holds no settlement for it (never settled here, or ${older})`,
  };
}
