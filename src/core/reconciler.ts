/** Unfinished settlements followed to their end (one replica each), recorded; `serve` runs it. */

import { firstLine } from "../protocol/words.js";
import { rpcErrorKind } from "../rpc/rpc-errors.js";
import type { ChainFamily, Followed } from "./family.js";
import { MAY_SEND } from "./settle-loop.js";
import { ageSecondsOf, type EntryState, type JournalEntry, type SettlementStore } from "./store.js";

/** What one pass found for one settlement. */
export interface Reconciled {
  readonly key: string;
  readonly network?: string | undefined;
  readonly transaction?: string | undefined;
  /** How long it had been waiting, in seconds. */
  readonly ageSeconds?: number | undefined;
  /** busy: another settle or replica holds it right now; error: it could not be followed. */
  readonly outcome: Followed["outcome"] | "busy" | "error";
  readonly detail: string;
}

export interface ReconcileOptions {
  /** Settlements unchanged for less than this are left to the settle that wrote them. */
  readonly idleMs?: number | undefined;
  /** Settlements followed at once. */
  readonly concurrency?: number | undefined;
}

const WRITTEN: Readonly<Record<Followed["outcome"], EntryState | undefined>> = {
  landed: "landed",
  failed: "failed",
  dropped: "dropped",
  open: undefined,
};

export async function reconcileOnce(
  families: readonly ChainFamily[],
  store: SettlementStore,
  options: ReconcileOptions = {},
): Promise<Reconciled[]> {
  // History past the store's retention moves beside the pass (when due), not in its way.
  void store.retain?.();
  const open = await store.openSettlements(options.idleMs ?? 0);
  const found: Reconciled[] = [];
  // Our prelude (key#name) is followed as an action; a payer's own one, with its settlement's retry.
  const queue = open.filter(
    (entry) => (entry.action || !entry.key.includes("#")) && !entry.action?.partOf,
  );
  // A request answered by another entry's transaction ends with it.
  const members = open.filter((entry) => entry.action?.partOf);
  const worker = async () => {
    for (let entry = queue.shift(); entry; entry = queue.shift()) {
      found.push(await followOne(families, store, entry));
    }
    for (let entry = members.shift(); entry; entry = members.shift()) {
      const ended = await endMember(store, entry).catch(() => undefined);
      if (ended) found.push(ended);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 4) }, worker));
  return found;
}

async function followOne(
  families: readonly ChainFamily[],
  store: SettlementStore,
  entry: JournalEntry,
): Promise<Reconciled> {
  const key = entry.key;
  const ageSeconds = ageSecondsOf(entry);
  const ended = (outcome: "busy" | "error", detail: string): Reconciled => {
    return { key, ageSeconds, transaction: entry.hashes.at(-1), outcome, detail };
  };
  const family = families.find((f) => f.owns(entry));
  if (!family) return ended("error", "no family");
  let claimed = false;
  try {
    claimed = await store.claim(key);
    if (!claimed) return ended("busy", "being settled right now");
    // The list predates this claim: writing `landed` over a settle answered since re-answers it.
    const current = await store.get(key);
    if (!current || !isOpen(current)) return ended("busy", "settled meanwhile");
    // Outside any dry run: it may send the same bytes again.
    const followed = await family.follow(current, MAY_SEND);
    // One answered `submitted` had its success handed over already: landed, it is answered.
    const state =
      followed.outcome === "landed" && current.state === "submitted"
        ? "answered"
        : WRITTEN[followed.outcome];
    if (state) await store.recordState(key, state);
    return { key, ageSeconds, ...followed };
  } catch (error) {
    return ended("error", `${rpcErrorKind(error)}: ${firstLine(error)}`);
  } finally {
    if (claimed) await Promise.resolve(store.release(key)).catch(() => undefined);
  }
}

/** A request answered by another entry's transaction takes its end; a success stays answered. */
async function endMember(
  store: SettlementStore,
  listed: JournalEntry,
): Promise<Reconciled | undefined> {
  const owner = listed.action?.partOf;
  const sent = owner ? await store.get(owner) : undefined;
  if (!sent || isOpen(sent)) return undefined;
  // Under its claim, as the store has it now: a stale `broadcast` written over would answer twice.
  if (!(await store.claim(listed.key))) return undefined;
  try {
    const member = await store.get(listed.key);
    if (!member || !isOpen(member)) return undefined;
    const landed = sent.state === "answered" || sent.state === "landed";
    const state: EntryState = landed
      ? member.state === "submitted"
        ? "answered"
        : "landed"
      : sent.state;
    await store.recordState(member.key, state);
    return {
      key: member.key,
      transaction: sent.hashes.at(-1),
      outcome: landed ? "landed" : sent.state === "dropped" ? "dropped" : "failed",
      detail: `with ${sent.key}`,
    };
  } finally {
    await Promise.resolve(store.release(listed.key)).catch(() => undefined);
  }
}

/** Not at its end: followed (or, for a batch's claim, waiting on its batch). */
const isOpen = (entry: JournalEntry) => entry.state === "broadcast" || entry.state === "submitted";

/** A pass every `everyMs` (timers never hold the process up), until stopped. */
export class Reconciler {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;
  /** The last pass's findings, for /metrics and doctor. */
  last: Reconciled[] = [];

  constructor(
    private readonly run: () => Promise<Reconciled[]>,
    private readonly everyMs: number,
  ) {}

  start(): void {
    this.#schedule();
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.run()
        .then((found) => {
          this.last = found;
        })
        .catch(() => undefined)
        .finally(() => this.#schedule());
    }, this.everyMs);
    this.#timer.unref();
  }

  /** Stops, after the pass in progress (if any) has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }
}
