/**
 * The settlement store port: what the chain and scheme code needs kept durably, whoever keeps it.
 * The file journal (store/journal.ts) is the embedded default for one process; the PostgreSQL
 * store (store/postgres.ts) lets several replicas share one truth. Only the CLI's configuration
 * picks one.
 */
import type { Catalogue } from "../bazaar/catalogue.js";

/**
 * The chain an entry is on, as a CAIP-2 id ("eip155:8453", "solana:5eykt4…"); its namespace
 * (before the colon) says which family follows it.
 */
export type Network = string;
/** An account as its chain writes it (EVM: 0x hex, Solana: base58). */
export type Account = string;
/** A transaction's id as its chain writes it (EVM: its 0x hash, Solana: its base58 signature). */
export type TxHash = string;
/** A signed transaction's bytes as text (EVM: 0x hex, Solana: base64). */
export type RawTx = string;
/** The sender's transaction count it was sent with (0 on a chain without one). */
export type TxNonce = number;

/** The namespace of a CAIP-2 network ("eip155", "solana"). */
export const namespaceOf = (network: Network): string => network.slice(0, network.indexOf(":"));

/**
 * Why `raiseHighest` raised nothing: a higher value is kept, or the id was marked changed after
 * the state the value was checked against was read.
 */
export type RaiseRefusal = { readonly higher: bigint } | { readonly changedAt: number };

/** Gas one settlement of ours wasted, and whose payment it was (chain/gas-at-risk.ts). */
export interface Waste {
  readonly payer: string;
  readonly asset: string;
  readonly gas: bigint;
  readonly cause: "reverted" | "out-of-gas" | "no-transfer";
}

/** The Transfer that proves the payment happened. */
export interface ExpectedTransfer {
  readonly token: Account;
  readonly from: Account;
  readonly to: Account;
  readonly value: string;
}

/** Whose doing a wasted transaction is: a payer, in an asset. */
export interface Chargeable {
  readonly payer: string;
  readonly asset: string;
}

/**
 * A transaction that carries no payment of its own (a channel's claim, settle or refund): it
 * landed when it was mined and did not revert; if it wastes gas, it is charged to `chargeTo`.
 */
export interface SentAction {
  /** In a word, for status and logs ("claim", "settle", "refund"). */
  readonly name: string;
  /** Each is charged a share of what it wastes; empty when another entry of it is charged. */
  readonly chargeTo: readonly Chargeable[];
  /**
   * A transaction that answers several requests (a batch of claims): the keys of those requests,
   * each written down with it, so a retry of any of them finds this transaction.
   */
  readonly members?: readonly string[] | undefined;
  /** A request answered by another entry's transaction: that entry's key (it is followed there). */
  readonly partOf?: string | undefined;
}

export type EntryState =
  /** Broadcast (or about to be); no final answer given yet. */
  | "broadcast"
  /** Success was answered once mined (or once followed to its landing): the authorization is spent. */
  | "answered"
  /**
   * Success was answered `submitted`, before it was mined: the authorization is spent for us, and
   * its transaction is followed (and sent again if dropped) until it lands (then `answered`) or can
   * no longer land (then `failed` or `dropped`).
   */
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
  readonly signer: Account;
  readonly txNonce: TxNonce;
  /** The Transfer that proves the payment; none for a transaction that only prepares one. */
  readonly expect?: ExpectedTransfer | undefined;
  /** What a transaction without a Transfer of its own was sent for. */
  readonly action?: SentAction | undefined;
  /** Every hash broadcast for this authorization (a replacement adds one), oldest first. */
  hashes: TxHash[];
  /** The signed transactions behind `hashes`, to re-broadcast after a crash. */
  raws: RawTx[];
  state: EntryState;
  /** The run of a process that sent it (a replica, a CLI run), then the one that answered it. */
  owner?: string | undefined;
  /** When the entry last changed (unix milliseconds), where the store knows it. */
  updatedAt?: number | undefined;
}

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
  /** What is spent from, as the family names it for the in-flight ledger (EVM: chain:token:owner(>spender)). */
  readonly slot: string;
  readonly amount: bigint;
  readonly hashes: readonly TxHash[];
  /** The block its transaction landed in, once the replica that sent it saw that. */
  readonly landedIn?: bigint | undefined;
}

/**
 * How far back a payer's settlements count (`settlementsOf`): each buys it one wasted settlement
 * per hour past the wasted-gas budget, so not forever.
 */
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
  /** Where it keeps things, for banners and logs (a file path, or a database without password). */
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
  /**
   * Resolves once durable; `answered` must be, before success is answered. A rejection whose
   * error is marked by `notRecorded()` says the record certainly was not made (the store was not
   * reached); any other may or may not have been.
   */
  recordState(key: string, state: EntryState): Promise<void>;
  /** Entries broadcast with no final answer yet, as of when the store was opened. */
  unsettled(): Iterable<JournalEntry>;
  /**
   * Settlements not followed to their end (broadcast), unchanged for at least
   * `idleMs`, oldest first: what the reconciler follows.
   */
  openSettlements(idleMs: number): Promise<JournalEntry[]>;
  /** The settlement one of whose transactions is `hash`, as far as the store remembers it. */
  findByTransaction(hash: string): Promise<JournalEntry | undefined>;
  /** The answer kept for a `payment-identifier`, if one was (a success), else undefined. */
  idempotencyAnswer(id: string): Promise<unknown>;
  /**
   * A store that keeps settled history apart from what it works with (the journal's archive):
   * the settlement of `key` there too, for status. Without it, `get` answers.
   */
  findArchived?(key: string): Promise<JournalEntry | undefined>;
  /**
   * Since when (unix ms) the store keeps settlements, when it forgets older ones: status says a
   * settlement not found may be older than that.
   */
  keptSince?(): Promise<number | undefined>;

  /** This run of this process, as the store names who sent or answered a settlement. */
  readonly runId: string;
  /**
   * Writes down that a success is answered for `key`, by this run (core/answers.ts); resolves
   * once durable. Rejects as recordState does.
   */
  markAnswered(key: string, state?: "answered" | "submitted"): Promise<void>;
  /** A success this run wrote down but did not hand over: `landed` again, if still this run's. */
  unmarkAnswered(key: string): Promise<void>;

  /**
   * Scheme state: for any scheme, per `namespace` (the scheme's, and what it keeps there) and
   * `id`, the highest value raised, and when the id last changed (markChanged). Both are atomic
   * for every process sharing the store.
   *
   * Raises the highest value kept for `id` to `value`. Answers undefined when `value` is now the
   * highest (or was already); `{higher}`, the higher value kept; or, when `value` was checked
   * against a state of `id` read at `seenAt` (unix ms) and `id` was marked changed at a later time
   * than that, `{changedAt}` (the latest such time): nothing is raised, read it again. Without
   * `seenAt` no change refuses it. A shared store has the raise durable once it answers; the file
   * journal writes it within a second (a crash may lose that second's raises, so keep here only
   * what something else still bounds).
   */
  raiseHighest(
    namespace: string,
    id: string,
    value: bigint,
    seenAt?: number,
  ): MaybePromise<RaiseRefusal | undefined>;
  /**
   * `id`'s state (in `namespace`) changed at `at` (unix ms), or may change until then, by means
   * the raises do not show: every process sharing the store has its raises of `id` checked
   * against a state read before `at` refused (`{changedAt}`). The latest `at` marked counts;
   * resolves once durable.
   */
  markChanged(namespace: string, id: string, at: number): Promise<void>;

  /** Binds `id` to the request `fingerprint`, or says what it is already bound to. */
  claimIdempotency(id: string, fingerprint: string): MaybePromise<IdempotencyClaim>;
  /** The final answer for `id` (kept), or undefined to let a later retry run again. */
  finishIdempotency(id: string, answer: unknown): MaybePromise<void>;

  /**
   * A shared store: reserves what settlement `key` will spend, with the slots locked against every
   * replica while `decide` looks at what every settlement (of any replica) holds there; `decide`
   * must not use the store itself. `decide` answers a refusal
   * (then nothing is reserved) or undefined. Absent on a store only one process uses.
   */
  reserveShared?<R>(
    key: string,
    spends: readonly { readonly slot: string; readonly amount: bigint }[],
    decide: (held: readonly HeldElsewhere[]) => Promise<R | undefined>,
  ): Promise<R | undefined>;
  /** The settlement's transaction landed in `landedIn`, or (undefined) never will spend anything. */
  releaseShared?(key: string, landedIn?: bigint): Promise<void>;

  /**
   * A shared store: tells the other replicas a payer's settlement of ours reverted, or (`waste`)
   * wasted gas some other way, with the asset and the gas.
   */
  chargeRevert?(chainId: number, payer: string, waste?: Waste): Promise<void>;
  /**
   * A shared store: `listener` hears of the reverts and waste other replicas charge (at most a
   * third of a lease late), with when they happened (unix milliseconds).
   */
  onRevertElsewhere?(
    listener: (chainId: number, payer: string, at: number, waste?: Waste) => void,
  ): void;
  /**
   * How many settlements of this payer (answered in the last `SETTLEMENTS_LOOKBACK_MS`), or in
   * this asset (ever), were answered success on `network`, counted up to `atMost`, as far as the
   * store remembers (a restart, other replicas); asked only while gas is being wasted.
   */
  settlementsOf?(
    network: Network,
    who: { payer: string } | { asset: string },
    atMost: number,
  ): Promise<number>;

  /**
   * Moves final settlements past the store's retention out of the table settles use, when due
   * (a shared store: on one replica per period); lookups still find them. Resolves with how many
   * it moved; never rejects. Absent on a store that keeps its history otherwise.
   */
  retain?(): Promise<number>;

  status(): MaybePromise<StoreStatus>;

  /** The bazaar catalogue (bazaar/catalogue.ts), when the store keeps one: discovery is off without. */
  readonly catalogue?: Catalogue | undefined;

  close(): MaybePromise<void>;
}
