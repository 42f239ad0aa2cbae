/** The one settle loop, one settle of a key at a time across replicas: what the store holds is
 * followed, never resent; a success is recorded here, and only here, before it is answered. */
import { type Failure, failure } from "../protocol/errors.js";
import type { SettleResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import type { Answers } from "./answers.js";
import type { SettleStage } from "./metrics.js";
import type { JournalEntry, SettlementStore } from "./store.js";

declare const licence: unique symbol;
/** The licence to broadcast, only outside a dry run: a `simulated` settle can never send. */
export type MaySend = { readonly [licence]: true };
export const MAY_SEND = {} as MaySend;

/** A success not handed over yet: recorded under each key first, else answered `unrecorded`. */
export class Success<R> {
  constructor(
    readonly result: R,
    /** What the store marks answered: the settlement's key, and any other request it answers. */
    readonly keys: readonly string[],
    /** The answer when the store could not record it. */
    readonly unrecorded: R,
    /** False when only submitted: the store then keeps following it until it lands. */
    readonly mined = true,
  ) {}
}

/** What a `send` or a `pickUp` came to: an answer as it stands, or a success to record first. */
export type Outcome<R> = R | Success<R>;

/** The answer of an outcome nothing sent: never a success to record. */
export const unsent = <R>(outcome: Outcome<R>): R =>
  outcome instanceof Success ? outcome.unrecorded : outcome;

/** What the loop runs in: the store (turns, what it holds) and the record of answers. */
export interface LoopPorts {
  readonly journal: Pick<SettlementStore, "claim" | "get" | "release">;
  readonly answers: Pick<Answers, "answer">;
}

/** One settlement's steps from its family and scheme: `P` its priced transaction, `R` its answer. */
export interface SettleSteps<P, R extends { readonly ok: boolean } = SettleResult> {
  /** What the chain consumes, and what the store writes it down under. */
  readonly key: string;
  /** The answer while another settle (here or on another replica) holds the key's turn. */
  busy(): R;
  /** The outcome of what the store holds of this key, or undefined to settle afresh. */
  pickUp(
    entry: JournalEntry,
    waitUntil: WaitUntil,
    may: MaySend | undefined,
  ): Promise<Outcome<R> | undefined>;
  /** Everything checked again, and the transaction priced; a refusal is the answer. */
  prepare(waitUntil: WaitUntil): Promise<{ ok: true; value: P } | { ok: false; result: R }>;
  /** `simulated`: run it against the chain, hold and send nothing. */
  simulate(prepared: P): Promise<R>;
  /** Holds what it will spend against what is in flight; a refusal is the answer. */
  hold(prepared: P): Promise<R | undefined>;
  /** Records it durably, broadcasts it and follows it to `waitUntil`. */
  send(prepared: P, waitUntil: Exclude<WaitUntil, "simulated">, may: MaySend): Promise<Outcome<R>>;
  /** Told how long a stage took (serve's metrics); the loop times `checks`, `send` the rest. */
  readonly observe?: ((stage: SettleStage, seconds: number) => void) | undefined;
}

/** Why a settle waits: another holds its turn. */
export const inProgress = (
  what = "this is being settled right now; retry in a moment",
  x402Reason?: string,
): Failure => failure("settlement_in_progress", what, x402Reason ? { x402Reason } : {});

/** Runs one settle of `steps` in its key's turn; never throws what a step does not. */
export function settleInTurn<P, R extends { readonly ok: boolean }>(
  ports: LoopPorts,
  steps: SettleSteps<P, R>,
  waitUntil: WaitUntil,
): Promise<R> {
  return withTurn(ports.journal, steps.key, steps.busy, () => inTurn(ports, steps, waitUntil));
}

/** Runs `work` in `key`'s turn, or answers `busy`; a success's turn is kept until it is out. */
export async function withTurn<R extends { readonly ok: boolean }>(
  store: Pick<SettlementStore, "claim" | "release">,
  key: string,
  busy: () => R,
  work: () => Promise<R>,
): Promise<R> {
  if (!(await store.claim(key))) return busy();
  let result: R | undefined;
  try {
    result = await work();
    return result;
  } finally {
    const releasing = Promise.resolve(store.release(key)).catch(() => undefined);
    if (!result?.ok) await releasing;
  }
}

/** The loop inside a turn the caller already holds (a claim that may join a batch holds its own). */
export async function inTurn<P, R extends { readonly ok: boolean }>(
  ports: LoopPorts,
  steps: SettleSteps<P, R>,
  waitUntil: WaitUntil,
): Promise<R> {
  const entry = await ports.journal.get(steps.key);
  // A dry run's pick-up is given no licence to send: the rule is the loop's, not each step's.
  const may = waitUntil === "simulated" ? undefined : MAY_SEND;
  const picked = entry ? await steps.pickUp(entry, waitUntil, may) : undefined;
  if (picked) return answer(ports.answers, picked);
  const started = performance.now();
  const prepared = await steps.prepare(waitUntil);
  steps.observe?.("checks", (performance.now() - started) / 1000);
  if (!prepared.ok) return prepared.result;
  if (waitUntil === "simulated") return steps.simulate(prepared.value);
  const short = await steps.hold(prepared.value);
  if (short) return short;
  return answer(ports.answers, await steps.send(prepared.value, waitUntil, MAY_SEND));
}

/** Records a success under every key it answers, then hands it over with nothing awaited between. */
async function answer<R>(answers: Pick<Answers, "answer">, outcome: Outcome<R>): Promise<R> {
  if (!(outcome instanceof Success)) return outcome;
  const { keys, mined } = outcome;
  const written = await Promise.all(keys.map((key) => answers.answer(key, mined)));
  return written.every(Boolean) ? outcome.result : outcome.unrecorded;
}
