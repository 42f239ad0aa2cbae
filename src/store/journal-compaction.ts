/**
 * Compacting the journal while it is written: the file is rewritten to what is in memory, and
 * what left memory goes to an archive segment. Appends are held back only at the cut and the swap
 * (which copies lines appended since); each record sets a value, so one read twice changes
 * nothing. Crash-safe: synced before the rename, the old file holds everything until it.
 */
import { fstat, openSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { JournalEntry } from "../core/store.js";
import type { ArchivedLine, EntryLine, JournalArchive } from "./journal-archive.js";
import { readFrom, syncDir } from "./journal-archive.js";
import type { GroupCommit } from "./journal-commit.js";
import { APPEND_FLAGS, type CompactionStep } from "./journal-file.js";

/** The first line of a compacted journal: the archive segments that count (1 to `through`). */
export interface ArchiveLine {
  readonly t: "archive";
  readonly through: number;
}

/** What is in memory at the cut, to write out after it. */
export interface Snapshot {
  readonly entries: readonly JournalEntry[];
  readonly ids: readonly (readonly [string, IdBound])[];
  /** The scheme state's and the catalogue's lines. */
  readonly others: readonly object[];
}

export interface IdBound {
  readonly fingerprint: string;
  readonly answer?: unknown;
  /** When it was bound or answered (unix ms). */
  readonly at?: number | undefined;
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
  if (through > 0) yield `${JSON.stringify({ t: "archive", through } satisfies ArchiveLine)}\n`;
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

export interface Compactable {
  readonly file: string;
  readonly archive: JournalArchive;
  readonly commits: GroupCommit;
  /** The journal's descriptor now (undefined once closed). */
  fd(): number | undefined;
  /** Between groups: what is in memory, and what left it since the last compaction (taken). */
  cut(): { snapshot: Snapshot; archived: ArchivedLine[] };
  /** Between groups: the new file's descriptor replaces the old one (closed here). */
  swap(fd: number): void;
  /** Tests only: told of each step as it is reached (what a crash there leaves on disk). */
  step?: ((step: CompactionStep) => void) | undefined;
}

/** Compacts while the journal is written; answers the new file's lines and memory's share. */
export async function compactLive(
  journal: Compactable,
): Promise<{ lines: number; live: number } | undefined> {
  const { file, archive, commits } = journal;
  const cut = await commits.exclusive(async () => {
    const fd = journal.fd();
    if (fd === undefined) return undefined;
    const { size } = await promisify(fstat)(fd);
    return { size, ...journal.cut() };
  });
  if (!cut) return undefined;
  journal.step?.("cut");
  const next = `${file}.compact`;
  const segment = cut.archived.length > 0 ? archive.through + 1 : archive.through;
  try {
    if (segment > archive.through) await archive.write(cut.archived, segment);
    journal.step?.("segment");
    let lines = 0;
    const out = await open(next, "w", 0o600);
    try {
      let chunk = "";
      for (const text of liveLines(segment, cut.snapshot)) {
        chunk += text;
        if (chunk.length < 256 * 1024) continue;
        lines += await writeCounted(out, chunk);
        chunk = "";
        // The event loop serves between chunks: copying memory out never stalls a settle.
        await new Promise((resolve) => setImmediate(resolve));
      }
      lines += await writeCounted(out, chunk);
      const live = lines;
      await out.sync();
      journal.step?.("written");
      const swapped = await commits.exclusive(async () => {
        const fd = journal.fd();
        if (fd === undefined) return false;
        // What was appended since the cut (a few groups), then the rename that commits it all.
        lines += await writeCounted(out, await readFrom(file, cut.size));
        await out.sync();
        journal.step?.("tail");
        await rename(next, file);
        archive.through = segment;
        journal.swap(openSync(file, APPEND_FLAGS, 0o600));
        journal.step?.("renamed");
        await syncDir(path.dirname(file));
        journal.step?.("synced");
        return true;
      });
      if (!swapped) throw new Error("the journal was closed while it was compacted");
      return { lines, live };
    } finally {
      await out.close();
    }
  } catch (error) {
    await rm(next, { force: true });
    // A segment for a compaction that did not commit: the old file still holds its records.
    if (segment > archive.through) archive.removeUnfinished();
    throw error;
  }
}

async function writeCounted(
  out: Awaited<ReturnType<typeof open>>,
  text: string | Buffer,
): Promise<number> {
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  if (bytes.length > 0) await out.writeFile(bytes);
  let lines = 0;
  for (let at = bytes.indexOf(0x0a); at >= 0; at = bytes.indexOf(0x0a, at + 1)) lines++;
  return lines;
}
