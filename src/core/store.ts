/** The settlement store port: the file journal (one process) or PostgreSQL (shared by replicas). */
import type { Catalogue } from "../bazaar/catalogue.js";

/** The chain an entry is on, as a CAIP-2 id; its namespace says which family follows it. */
export type Network = string;
/** A transaction's id as its chain writes it (EVM: its 0x hash, Solana: its base58 signature). */
export type TxHash = string;
/** A signed transaction's bytes as text (EVM: 0x hex, Solana: base64). */
export type RawTx = string;

/** The namespace of a CAIP-2 network ("eip155", "solana"). */
export const namespaceOf = (network: Network): string => network.slice(0, network.indexOf(":"));

/** Why `raiseHighest` raised nothing: a higher value is kept, or the id changed since `seenAt`. */
export type RaiseRefusal = { readonly higher: bigint } | { readonly changedAt: number };

/** Gas one settlement of ours wasted, and whose payment it was (chain/gas-at-risk.ts). */
export interface Waste extends Chargeable {
  readonly gas: bigint;
  readonly cause: "reverted" | "out-of-gas" | "no-transfer";
}

/** The Transfer that proves the payment happened, accounts as their chain writes them. */
export interface ExpectedTransfer {
  readonly token: string;
  readonly from: string;
  readonly to: string;
  readonly value: string;
}

/** Whose doing a wasted transaction is: a payer, in an asset. */
export interface Chargeable {
  readonly payer: string;
  readonly asset: string;
}

/** A transaction without a payment of its own (a channel's claim, settle, refund). */
export interface SentAction {
  /** In a word, for status and logs ("claim", "settle", "refund"). */
  readonly name: string;
  /** Each is charged a share of what it wastes; empty when another entry of it is charged. */
  readonly chargeTo: readonly Chargeable[];
  /** The keys of the requests one transaction answers (a batch), so a retry of any finds it. */
  readonly members?: readonly string[] | undefined;
  /** A request answered by another entry's transaction: that entry's key. */
  readonly partOf?: string | undefined;
}

export type EntryState =
  /** Broadcast (or about to be); no final answer given yet. */
  | "broadcast"
  /** Success was answered once mined: the authorization is spent. */
  | "answered"
  /** Success answered before it was mined; followed (resent if dropped) until it lands or cannot. */
  | "submitted"
  /** Final on chain, and no success handed to anyone yet: the next settle of it answers one. */
  | "landed"
  /** Reverted, or never reached the node: a new attempt may start from scratch. */
  | "failed"
  /** The transaction is gone from the node and its nonce was used by another. */
  | "dropped";

/** Whether a success was handed over for it (once mined, or on being submitted). */
export const isAnswered = (state: EntryState | undefined): boolean =>
  state === "answered" || state === "submitted";

export interface JournalEntry {
  readonly key: string;
  readonly network: Network;
  /** Who sent it: our key (or a payer, for a transaction it signed itself). */
  readonly signer: string;
  /** The sender's transaction count it was sent with (0 on a chain without one). */
  readonly txNonce: number;
  /** The Transfer that proves the payment; none for a transaction that only prepares one. */
  readonly expect?: ExpectedTransfer | undefined;
  /** What a transaction without a Transfer of its own was sent for. */
  readonly action?: SentAction | undefined;
  /** Every hash broadcast for it, oldest first. */
  hashes: TxHash[];
  /** The signed transactions behind `hashes`, to re-broadcast after a crash. */
  raws: RawTx[];
  state: EntryState;
  /** The run that sent it, then the one that answered it. */
  owner?: string | undefined;
  /** When the entry last changed (unix ms), where the store knows it. */
  updatedAt?: number | undefined;
}

/** How long an entry has been as it is, in seconds, where the store knows when it changed. */
export const ageSecondsOf = (entry: JournalEntry) =>
  entry.updatedAt !== undefined ? Math.round((Date.now() - entry.updatedAt) / 1000) : undefined;

export type NewEntry = Omit<JournalEntry, "hashes" | "raws" | "state" | "owner" | "updatedAt">;

/** What a `payment-identifier` was first used for, and the answer given to it, once there is one. */
export type IdempotencyClaim =
  /** The id is new (or its last run died unanswered): this caller runs the settle. */
  | { readonly kind: "run" }
  /** Settled before with the same request: answer this again. */
  | { readonly kind: "answered"; readonly answer: unknown }
  /** The same request is being settled right now by another caller. */
  | { readonly kind: "running" }
  /** The id was used for a different request. */
  | { readonly kind: "conflict" };

/** What /health and /readyz say about the store. */
export interface StoreStatus {
  readonly shared: boolean;
  readonly where: string;
  readonly reachable: boolean;
  readonly error?: string | undefined;
  /** A shared store: the signing keys this replica holds the lease of, and those it lost. */
  readonly signersHeld?: readonly string[] | undefined;
  readonly signersLost?: readonly string[] | undefined;
}

/** A payer's spend held by a settlement in flight (of any replica), and its transactions so far. */
export interface HeldElsewhere {
  readonly key: string;
  /** What is spent from, as the family names it (EVM: chain:token:owner(>spender)). */
  readonly slot: string;
  readonly amount: bigint;
  readonly hashes: readonly TxHash[];
  /** The block its transaction landed in, once the replica that sent it saw that. */
  readonly landedIn?: bigint | undefined;
}

/** How far back a payer's settlements count (`settlementsOf`): each buys one wasted settlement. */
export const SETTLEMENTS_LOOKBACK_MS = 30 * 24 * 60 * 60_000;

/** What a `store_unavailable` answer tells the caller to wait before retrying, in seconds. */
export const STORE_RETRY_AFTER_SECONDS = 5;

const NOT_RECORDED = Symbol("not recorded");

/** Marks `error` as thrown before the store was reached: nothing of the write happened. */
export function markNotRecorded<E extends object>(error: E): E {
  (error as Record<symbol, boolean>)[NOT_RECORDED] = true;
  return error;
}

export function notRecorded(error: unknown): boolean {
  return typeof error === "object" && error !== null && NOT_RECORDED in error;
}

/** Why a settlement whose transaction was sent is answered pending: its success is not recorded. */
export const UNRECORDED =
  "the transaction was sent, but the settlement store could not record the answer; retry to get it (it is never sent twice)";

type MaybePromise<T> = T | Promise<T>;

export interface SettlementStore {
  /** Where it keeps things, for banners and logs (never a password). */
  readonly where: string;
  /** Whether several replicas may share it. */
  readonly shared: boolean;

  get(key: string): MaybePromise<JournalEntry | undefined>;
  /** Marks a settlement of `key` as running here; false if one already is (here or elsewhere). */
  claim(key: string): MaybePromise<boolean>;
  release(key: string): MaybePromise<void>;
  /** Resolves once durable: await it before broadcasting the first transaction. */
  recordSend(entry: NewEntry, hash: TxHash, raw: RawTx): Promise<void>;
  /** Resolves once durable: await it before broadcasting a replacement (same nonce, higher fee). */
  recordReplace(key: string, hash: TxHash, raw: RawTx): Promise<void>;
  /** Resolves once durable. A rejection marked `notRecorded()` certainly wrote nothing. */
  recordState(key: string, state: EntryState): Promise<void>;
  /** Entries broadcast with no final answer yet, as of when the store was opened. */
  unsettled(): Iterable<JournalEntry>;
  /** Unfinished settlements unchanged for `idleMs`, oldest first: what the reconciler follows. */
  openSettlements(idleMs: number): Promise<JournalEntry[]>;
  /** The settlement one of whose transactions is `hash`, as far as the store remembers it. */
  findByTransaction(hash: string): Promise<JournalEntry | undefined>;
  /** The answer kept for a `payment-identifier`, if one was (a success), else undefined. */
  idempotencyAnswer(id: string): Promise<unknown>;
  /** The settlement of `key` in settled history kept apart (the journal's archive), for status. */
  findArchived?(key: string): Promise<JournalEntry | undefined>;
  /** Since when (unix ms) the store keeps settlements, when it forgets older ones. */
  keptSince?(): Promise<number | undefined>;

  /** This run of this process, as the store names who sent or answered a settlement. */
  readonly runId: string;
  /** Writes down that this run answers success for `key`; durable, rejects as recordState. */
  markAnswered(key: string, state?: "answered" | "submitted"): Promise<void>;
  /** A success this run wrote down but did not hand over: `landed` again, if still this run's. */
  unmarkAnswered(key: string): Promise<void>;

  /** Atomically raises `id`'s highest value to `value`, else `{higher}`/`{changedAt}` (after
   * `seenAt`). Durable only within a second (file journal): keep what something else bounds. */
  raiseHighest(
    namespace: string,
    id: string,
    value: bigint,
    seenAt?: number,
  ): MaybePromise<RaiseRefusal | undefined>;
  /** `id` changed (or may) at `at` (unix ms): raises checked against older reads are refused. */
  markChanged(namespace: string, id: string, at: number): Promise<void>;

  /** Binds `id` to the request `fingerprint`, or says what it is already bound to. */
  claimIdempotency(id: string, fingerprint: string): MaybePromise<IdempotencyClaim>;
  /** The final answer for `id` (kept), or undefined to let a later retry run again. */
  finishIdempotency(id: string, answer: unknown): MaybePromise<void>;

  /** A shared store: reserves what `key` will spend, the slots locked across replicas while
   * `decide` (which must not use the store) reads what all hold; a refusal reserves nothing. */
  reserveShared?<R>(
    key: string,
    spends: readonly { readonly slot: string; readonly amount: bigint }[],
    decide: (held: readonly HeldElsewhere[]) => Promise<R | undefined>,
  ): Promise<R | undefined>;
  /** The settlement's transaction landed in `landedIn`, or (undefined) never will spend anything. */
  releaseShared?(key: string, landedIn?: bigint): Promise<void>;

  /** A shared store: tells other replicas a payer's settlement reverted or wasted gas. */
  chargeRevert?(chainId: number, payer: string, waste?: Waste): Promise<void>;
  /** A shared store: `listener` hears of reverts and waste other replicas charge. */
  onRevertElsewhere?(
    listener: (chainId: number, payer: string, at: number, waste?: Waste) => void,
  ): void;
  /** Successes of this payer (within SETTLEMENTS_LOOKBACK_MS) or asset, counted up to `atMost`. */
  settlementsOf?(
    network: Network,
    who: { payer: string } | { asset: string },
    atMost: number,
  ): Promise<number>;

  /** Moves final settlements past retention aside when due (still found); never rejects. */
  retain?(): Promise<number>;

  status(): MaybePromise<StoreStatus>;

  /** The bazaar catalogue, when the store keeps one: discovery is off without. */
  readonly catalogue?: Catalogue | undefined;

  close(): MaybePromise<void>;
}
