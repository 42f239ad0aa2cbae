/** What the core asks of a chain family (EVM, Solana); it routes to the first that claims. */
import type { Parties } from "../deny-list/deny-list.js";
import { failed } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import type { MaySend } from "./settle-loop.js";
import type { JournalEntry } from "./store.js";
import { failureOfThrown, namingEndpoint } from "./thrown.js";

export interface SupportedKind {
  readonly x402Version: 1 | 2;
  readonly scheme: string;
  readonly network: string;
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** A family's part of /supported. */
export interface Supported {
  readonly kinds: SupportedKind[];
  readonly extensions: readonly string[];
  /** Signing addresses by CAIP-2 pattern ("eip155:*"). */
  readonly signers: Readonly<Record<string, string[]>>;
}

/** An offered requirement on POST /accepts, already known to be an object with a network. */
export type Offer = Readonly<Record<string, unknown>> & { readonly network: string };

export interface ChainFamily {
  /** "evm", "svm": for logs and messages. */
  readonly name: string;
  /** Whether requests on `network` (in either x402 version's form) are this family's. */
  claims(network: string): boolean;
  verify(request: PaymentRequest): Promise<VerifyResult>;
  /** One settle, run once per `payment-identifier` by the core; never throws. */
  settle(request: PaymentRequest, waitUntil: WaitUntil): Promise<SettleResult>;
  /** Whether a transaction answered before is still on the chain (mined, or pending). */
  stillOnChain(request: PaymentRequest, transaction: string): Promise<boolean>;
  /** Counts a settlement a previous process left unsettled; false when it is not this family's. */
  seed(entry: JournalEntry): boolean;
  supported(): Promise<Supported>;
  /** One offered requirement this family claims, completed for a buyer, or undefined. */
  complete(
    offer: Offer,
    defaultTimeoutSeconds: number,
  ): Promise<Record<string, unknown> | undefined>;
  /** A settle found the chain unreachable: whatever was read from it may be stale now. */
  chainTrouble?(request: PaymentRequest): void;
  /** Whether a journal entry is one of this family's settlements. */
  owns(entry: JournalEntry): boolean;
  /** Follows an unfinished settlement as far as the chain tells now (resending a dropped one). */
  follow(entry: JournalEntry, may: MaySend): Promise<Followed>;
  /** What the chain says of a settlement's transaction now; nothing is sent. */
  observe(entry: JournalEntry): Promise<Observed>;
  /** The key a payment is written down under, or why it cannot be told from the request. */
  settlementKey(request: PaymentRequest): Promise<SettlementKey>;
  /** The parties the request names, without a chain call: the deny list is checked first. */
  parties?(request: PaymentRequest): Promise<Parties>;
  /** What the request moves, without a chain call; "nothing" by design (a batch claim, `upto` 0). */
  moves?(request: PaymentRequest, op: "verify" | "settle"): Moved | "nothing" | undefined;
}

/** What a request moves from its payer: the minimums of core/amount-floor.ts apply to it. */
export interface Moved {
  /** The network, as a CAIP-2 id. */
  readonly network: string;
  readonly asset: string;
  readonly amount: bigint;
  /** Where the request says it, for messages ("paymentRequirements.amount"). */
  readonly field: string;
}

export type SettlementKey =
  | { readonly ok: true; readonly key: string }
  | { readonly ok: false; readonly why: string };

/** A settlement's transaction as the chain has it now. */
export interface Observed {
  readonly network: string;
  /** mined: landed and paid; failed: landed and failed or paid nothing; pending: in a pool. */
  readonly onChain: "mined" | "failed" | "pending" | "unknown";
  readonly transaction?: string | undefined;
  /** The block (EVM) or slot (Solana) it landed in. */
  readonly block?: string | undefined;
  readonly confirmations?: number | undefined;
}

/** Where a settlement stands after the reconciler followed it. */
export interface Followed {
  /** failed: took nothing; dropped: can never land (its nonce went to another); open: not yet. */
  readonly outcome: "landed" | "failed" | "dropped" | "open";
  /** The network, as x402 v2 names it. */
  readonly network: string;
  readonly transaction?: string | undefined;
  /** In a few words: the block it landed in, why it failed, what it waits for. */
  readonly detail: string;
}

/** A request routed to what runs it (its scheme's method, the chain's context), or why not. */
export type Routed<T> = { readonly ok: true; readonly target: T } | ReturnType<typeof failed>;

/** The target `make` builds for a routed request; a throw (the RPC down) is the failure it means. */
export async function routedTo<T>(make: () => Promise<T>): Promise<Routed<T>> {
  try {
    return { ok: true, target: await make() };
  } catch (error) {
    return failed(failureOfThrown(error, "verify"));
  }
}

/** Runs a routed request: a throw becomes its failure; `after` rejecting (wrong chain) answers. */
export async function runRouted<T, R extends VerifyResult | SettleResult>(
  request: PaymentRequest,
  op: "verify" | "settle",
  routed: Routed<T>,
  call: (target: T) => Promise<R>,
  via: (target: T) => string | undefined,
  after: (target: T, result: R) => Promise<void> = async () => {},
): Promise<R> {
  if (!routed.ok) return routed as R;
  const thrown = (error: unknown) => failed(failureOfThrown(error, op)) as R;
  let result: R;
  try {
    result = await call(routed.target);
  } catch (error) {
    result = thrown(error);
  }
  const instead = await after(routed.target, result).then(() => undefined, thrown);
  return instead ?? namingEndpoint(result, request.requirements.network, via(routed.target));
}

/** A family's signing addresses under its CAIP-2 pattern ("eip155:*"), if it has any. */
export const signersUnder = (pattern: string, addresses: readonly string[]) =>
  addresses.length > 0 ? { [pattern]: [...addresses] } : {};
