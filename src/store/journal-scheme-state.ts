/**
 * The journal's scheme state (raiseHighest, markChanged): raises written a second later, a
 * change at once. batch-settlement's older lines (`voucher`, `changed`) are read as its namespace's.
 */
import { BudgetMap, bigintBytes, stringBytes } from "../core/byte-budget.js";
import { setNewest } from "../core/newest.js";
import type { RaiseRefusal } from "../core/store.js";

export type SchemeStateLine =
  /** The highest value raised for `id` in `namespace`. */
  | { t: "highest"; namespace: string; id: string; value: string }
  /** `id` in `namespace` changed at `changedAt` (unix ms), or may until then. */
  | { t: "changed-at"; namespace: string; id: string; changedAt: number };

/** batch-settlement's lines from before the state was generic: read, never written. */
export type PreviousSchemeStateLine =
  | { t: "voucher"; channel: string; amount: string }
  | { t: "changed"; channel: string; at: number | string };

const LINE_TYPES: ReadonlySet<unknown> = new Set(["highest", "changed-at", "voucher", "changed"]);

/** Whether a journal line is of the schemes' state, in this version's words or the previous one's. */
export const isSchemeStateLine = (line: {
  t: string;
}): line is SchemeStateLine | PreviousSchemeStateLine => LINE_TYPES.has(line.t);

/** The line a previous one stands for, or undefined when it is unreadable. */
function fromPreviousLine(line: PreviousSchemeStateLine): SchemeStateLine | undefined {
  // The previous lines were the batch-settlement scheme's.
  const namespace = "batch-settlement:voucher";
  if (line.t === "voucher")
    return { t: "highest", namespace, id: line.channel, value: line.amount };
  const changedAt = typeof line.at === "number" ? line.at : Date.parse(line.at);
  return Number.isFinite(changedAt)
    ? { t: "changed-at", namespace, id: line.channel, changedAt }
    : undefined;
}

/** Ids remembered (the most recently raised or changed), across namespaces... */
const IDS_KEPT = 100_000;
/**
 * ...and bytes: 24 MiB keeps the 100,000 newest highest values, 4 MiB the change times. A value
 * forgotten is still bounded by the scheme's own checks.
 */
const HIGHEST_BYTES = 24 * 2 ** 20;
const CHANGED_BYTES = 4 * 2 ** 20;

/** The key of an id in its namespace, unambiguous whatever either holds. */
const keyOf = (namespace: string, id: string) => JSON.stringify([namespace, id]);
const partsOf = (key: string) => JSON.parse(key) as [namespace: string, id: string];

export class JournalSchemeState {
  readonly #highest = new BudgetMap<string, bigint>(
    HIGHEST_BYTES,
    (key, value) => stringBytes(key) + bigintBytes(value),
  );
  readonly #changedAt = new BudgetMap<string, number>(
    CHANGED_BYTES,
    (key) => stringBytes(key) + 16,
  );
  /** Keys raised here and not yet written. */
  readonly #dirty = new Set<string>();

  /** See SettlementStore.raiseHighest; a raise is owed to the file until owed() hands it over. */
  raise(
    namespace: string,
    id: string,
    value: bigint,
    seenAt: number | undefined,
  ): RaiseRefusal | undefined {
    const key = keyOf(namespace, id);
    const changedAt = this.#changedAt.get(key);
    if (seenAt !== undefined && changedAt !== undefined && changedAt > seenAt) return { changedAt };
    const highest = this.#highest.get(key);
    if (highest !== undefined && highest > value) return { higher: highest };
    if (highest === value) return undefined;
    this.apply({ t: "highest", namespace, id, value: value.toString() });
    this.#dirty.add(key);
    return undefined;
  }

  /** A line read back from the file (a previous version's too), or just made here. */
  apply(written: SchemeStateLine | PreviousSchemeStateLine): void {
    const line =
      written.t === "voucher" || written.t === "changed" ? fromPreviousLine(written) : written;
    if (!line) return;
    const key = keyOf(line.namespace, line.id);
    if (line.t === "highest") {
      setNewest(this.#highest, key, BigInt(line.value), IDS_KEPT);
      return;
    }
    const before = this.#changedAt.get(key) ?? 0;
    setNewest(this.#changedAt, key, Math.max(before, line.changedAt), IDS_KEPT);
  }

  /** The raises not yet written, each id once. */
  owed(): SchemeStateLine[] {
    const lines = [...this.#dirty].flatMap((key) => this.#highestLine(key));
    this.#dirty.clear();
    return lines;
  }

  /** Everything kept, as a compacted file holds it. */
  all(): SchemeStateLine[] {
    return [
      ...[...this.#highest.keys()].flatMap((key) => this.#highestLine(key)),
      ...[...this.#changedAt].map(([key, changedAt]): SchemeStateLine => {
        const [namespace, id] = partsOf(key);
        return { t: "changed-at", namespace, id, changedAt };
      }),
    ];
  }

  #highestLine(key: string): SchemeStateLine[] {
    const value = this.#highest.get(key);
    if (value === undefined) return [];
    const [namespace, id] = partsOf(key);
    return [{ t: "highest", namespace, id, value: value.toString() }];
  }
}
