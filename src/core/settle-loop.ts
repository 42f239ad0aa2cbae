/**
 * The one settle loop every scheme's transaction goes through, on every chain:
 *
 *   take the settlement's turn → pick up what the store holds of it → check again and price it →
 *   hold what it spends → write it down, broadcast and follow it → answer → give the turn back.
 *
 * The loop owns the order and the rules that hold whatever is sent: one settle of a key at a time
 * (on every replica sharing the store); what the store holds is followed, never sent anew; a dry
 * run holds and sends nothing, and its pick-up is given no licence to; a success is recorded by
 * the loop, here and nowhere else, before it is answered (`Success`, core/answers.ts), and its
 * turn given back only once it is out. A family says how to build, send and read a transaction
 * on its chains (a `Sending` of its own); a scheme says what to send and how to judge what
 * landed (through the family's steps).
 */
import { type Failure, failure } from "../protocol/errors.js";
import type { SettleResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import type { Answers } from "./answers.js";
import type { SettleStage } from "./metrics.js";
import type { JournalEntry, SettlementStore } from "./store.js";

declare const licence: unique symbol;
/**
 * What a step needs to broadcast anything on a settle's behalf, the same bytes again included. The
 * loop hands it to `pickUp` only outside a dry run, and to `send` (never called in one), so
 * whatever the store holds, a `simulated` settle can read but never send; the reconciler (outside
 * any dry run) hands it to the family it asks to follow. Only src/core names `MAY_SEND`
 * (test/settle-loop.test.ts): everything else sends with a licence it was handed.
 */
export type MaySend = { readonly [licence]: true };
export const MAY_SEND = {} as MaySend;

/**
 * A success a `send` or a `pickUp` came to, not handed over yet: the loop records it as answered
 * under each of its keys (core/answers.ts) and only then answers it; a record the store could not
 * make answers `unrecorded` (pending, retry: it is never sent twice).
 */
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

/**
 * The outcome of a call nothing sent (refused before it left, or a dry run) is its own answer: it
 * is never a success to record, and were it one, it would answer pending, never unrecorded.
 */
export const unsent = <R>(outcome: Outcome<R>): R =>
  outcome instanceof Success ? outcome.unrecorded : outcome;

/** What the loop runs in: the store (turns, what it holds) and the record of answers. */
export interface LoopPorts {
  readonly journal: Pick<SettlementStore, "claim" | "get" | "release">;
  readonly answers: Pick<Answers, "answer">;
}

/**
 * One settlement's steps, as its family and scheme make them: `P` is its priced transaction, `R`
 * its answer (a settle's result, or what a scheme's own caller needs of it).
 */
export interface SettleSteps<P, R extends { readonly ok: boolean } = SettleResult> {
  /** What the chain consumes, and what the store writes it down under. */
  readonly key: string;
  /** The answer while another settle (here or on another replica) holds the key's turn. */
  busy(): R;
  /**
   * The store holds a settlement of this key: its outcome (followed to where it stands), or
   * undefined when nothing of it stands in the way of settling afresh. Without `may` (a dry run)
   * it sends nothing: it answers from what it reads.
   */
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
  /**
   * Writes it down (durably, before anything leaves), broadcasts it, follows it to `waitUntil`,
   * and says how it came out (a `Success` the loop records before it answers).
   */
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

/**
 * Runs `work` in `key`'s turn, or answers `busy` when another settle (here or on another replica)
 * holds it. The turn is given back after the answer: at once after a refusal; after a success,
 * once it is out, since nothing may stand between the record of a success and its hand-over
 * (core/answers.ts); a retry meanwhile is told to retry.
 */
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

/**
 * The one place a success is recorded (under every key it answers) before it is handed over, with
 * nothing awaited between the record and the return (core/answers.ts).
 */
async function answer<R>(answers: Pick<Answers, "answer">, outcome: Outcome<R>): Promise<R> {
  if (!(outcome instanceof Success)) return outcome;
  const { keys, mined } = outcome;
  const written = await Promise.all(keys.map((key) => answers.answer(key, mined)));
  return written.every(Boolean) ? outcome.result : outcome.unrecorded;
}
