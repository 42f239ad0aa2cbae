/** What a compacted journal holds (journal-history.ts compacts): memory's state, as lines. */
import type { JournalEntry } from "../core/store.js";
import type { EntryLine, IdBound } from "./journal-archive.js";
import type { Line } from "./journal-lines.js";

/** What is in memory at the cut, to write out after it. */
export interface Snapshot {
  readonly entries: readonly JournalEntry[];
  readonly ids: readonly (readonly [string, IdBound])[];
  /** The scheme state's and the catalogue's lines. */
  readonly others: readonly object[];
}

/** States a settlement never leaves by itself: written down whole, as one `entry` line. */
export const FINAL: ReadonlySet<string> = new Set(["answered", "failed", "dropped"]);

const iso = (ms: number | undefined) => new Date(ms ?? Date.now()).toISOString();

export function entryLine(entry: JournalEntry): EntryLine {
  const { raws: _raws, ...rest } = entry;
  return { t: "entry", ...rest };
}

/** A compacted journal's lines: a settled entry whole, a followed one as the lines it was made of. */
export function* liveLines(through: number, snapshot: Snapshot): Generator<string> {
  // Without segments, no line says so (an earlier version's file reads the same).
  if (through > 0) yield `${JSON.stringify({ t: "archive", through } satisfies Line)}\n`;
  for (const entry of snapshot.entries) {
    if (FINAL.has(entry.state)) {
      yield `${JSON.stringify(entryLine(entry))}\n`;
      continue;
    }
    const { hashes, raws, state, owner, updatedAt, ...rest } = entry;
    const at = iso(updatedAt);
    const records: object[] = hashes.map((hash, i) =>
      i === 0
        ? { t: "send", ...rest, hash, raw: raws[i] ?? "0x", at }
        : { t: "replace", key: entry.key, hash, raw: raws[i] ?? "0x", at },
    );
    if (state !== "broadcast") {
      records.push({ t: "state", key: entry.key, state, ...(owner ? { owner } : {}), at });
    } else if (owner) {
      (records[0] as { owner?: string }).owner = owner;
    }
    yield records.map((record) => `${JSON.stringify(record)}\n`).join("");
  }
  for (const [id, { fingerprint, answer, at }] of snapshot.ids) {
    yield `${JSON.stringify({ t: "id", id, fingerprint, answer, at: iso(at) })}\n`;
  }
  for (const line of snapshot.others) yield `${JSON.stringify(line)}\n`;
}
