/**
 * The journal's settled history past memory: what leaves memory goes to the next archive segment
 * and the file is compacted once grown, so a start-up reads what is live, and all stays findable.
 */
import { closeSync, fstat, openSync, renameSync, rmSync } from "node:fs";
import { rename, rm } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { valueBytes } from "../core/byte-budget.js";
import type { JournalEntry } from "../core/store.js";
import {
  type ArchivedLine,
  type EntryLine,
  type IdBound,
  JournalArchive,
  termsOf,
} from "./journal-archive.js";
import type { GroupCommit } from "./journal-commit.js";
import {
  APPEND_FLAGS,
  atOnce,
  chunked,
  dirSteps,
  fileSteps,
  type JournalOptions,
  readFrom,
  type Steps,
  serving,
} from "./journal-file.js";
import { type Line, withNetwork } from "./journal-lines.js";
import { entryBytes } from "./journal-memory.js";

/** Compact once the journal has grown by this many lines (journal-file.ts, compactAfterLines). */
const COMPACT_AFTER_LINES = 50_000;
/** Records held for the next segment; past this many they go out at once (bounded heap). */
const SEGMENT_RECORDS = 10_000;
/** ...or past these bytes of them (about 3,000 settlements: journal-memory.ts). */
const SEGMENT_BYTES = 4 * 2 ** 20;
const pendingBytes = (lines: readonly ArchivedLine[]) =>
  lines.reduce((n, line) => n + lineBytes(line), 0);
/** A record's bytes held for a segment (an entry as journal-memory.ts counts it). */
const lineBytes = (line: ArchivedLine) =>
  line.t === "entry" ? entryBytes({ ...line, raws: [] }) : valueBytes(line);

/** What is in memory at the cut, to write out after it. */
interface Snapshot {
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

export class JournalHistory {
  readonly archive: JournalArchive;
  /** The compacted copy, renamed over the file once whole. */
  readonly #next: string;
  readonly #compactAfter: number;
  /** What left memory since the last compaction; undefined once this process must not rewrite the file. */
  #toArchive: ArchivedLine[] | undefined = [];
  /** The estimated bytes of #toArchive. */
  #pendingBytes = 0;
  /** A reader that never compacts (status, doctor): it only looks things up. */
  readonly #reader: boolean;
  /** Segments written while reading that the file does not name yet. */
  #unfinished = 0;
  /** Lines in the file now, and just after it was last compacted (or read). */
  #lines = 0;
  #linesCompacted = 0;
  #compaction: Promise<void> | undefined;

  constructor(
    private readonly file: string,
    private readonly commits: GroupCommit,
    /** What memory holds now (entries, identifiers, scheme state, catalogue). */
    private readonly snapshot: () => Snapshot,
    private readonly options: JournalOptions,
  ) {
    this.archive = new JournalArchive(file);
    this.#next = `${file}.compact`;
    this.#compactAfter = options.compactAfterLines ?? COMPACT_AFTER_LINES;
    this.#reader = !Number.isFinite(this.#compactAfter);
  }

  /** The newest record found by `term` (journal-archive.ts) among those that left memory. */
  async find(term: string): Promise<ArchivedLine | undefined> {
    const pending = this.#toArchive ?? [];
    for (let i = pending.length - 1; i >= 0; i--) {
      const line = pending[i] as ArchivedLine;
      if (termsOf(line).includes(term)) return line;
    }
    return this.archive.find(term);
  }

  /** The newest settlement found by `term` past memory (`k:KEY`, `h:HASH`). */
  async entry(term: string): Promise<JournalEntry | undefined> {
    const line = await this.find(term);
    if (line?.t !== "entry") return undefined;
    const { t: _t, ...entry } = withNetwork(line);
    return { ...entry, raws: [] };
  }

  /** The answer kept for payment-identifier `id` past memory. */
  async answer(id: string): Promise<unknown> {
    const line = await this.find(`i:${id}`);
    return line?.t === "id" ? line.answer : undefined;
  }

  /** When the oldest settlement kept past memory was made (unix ms), if one is. */
  async oldest(): Promise<number | undefined> {
    const first = this.#toArchive?.[0];
    const pending = first?.t === "entry" ? first.updatedAt : first?.at;
    return (await this.archive.oldest()) ?? pending;
  }

  /** A record that left memory: kept for the next segment. */
  later(line: ArchivedLine): void {
    if (!this.#toArchive) return;
    this.#toArchive.push(line);
    this.#pendingBytes += lineBytes(line);
    // A reader of a long uncompacted file (an earlier version's) keeps the newest of it.
    if (this.#reader && this.#toArchive.length > 2 * SEGMENT_RECORDS) {
      this.#holdForSegment(this.#toArchive.slice(SEGMENT_RECORDS));
    }
    // Reading a long uncompacted file: history goes to disk as it is read, not kept in memory.
    else if (this.commits.fd === undefined && this.#segmentDue()) {
      atOnce(this.archive.write(this.#toArchive, this.archive.through + ++this.#unfinished));
      this.#holdForSegment([]);
    }
  }

  /** The file was read: when mostly settled history, archive it and rewrite the file from memory. */
  read(lines: number): void {
    this.#lines = this.#linesCompacted = lines;
    const toArchive = this.#toArchive;
    if (!toArchive || this.#reader) return;
    const { archive } = this;
    if (this.#unfinished === 0) archive.removeUnfinished();
    // A compaction's new file that was never renamed into place.
    rmSync(this.#next, { force: true });
    const snapshot = this.snapshot();
    const live = snapshot.entries.length + snapshot.ids.length + snapshot.others.length;
    if (this.#unfinished === 0 && !(lines > this.#compactAfter && lines > 4 * live)) return;
    const segment = archive.through + this.#unfinished + (toArchive.length > 0 ? 1 : 0);
    this.#unfinished = 0;
    try {
      atOnce(this.#written(toArchive, segment, snapshot));
      renameSync(this.#next, this.file);
      atOnce(dirSteps(path.dirname(this.file)));
      archive.through = segment;
      this.#holdForSegment([]);
      this.#lines = this.#linesCompacted = live + 1;
    } catch {
      rmSync(this.#next, { force: true });
      // No room for the compacted copy: segments the file does not name do not count.
      archive.removeUnfinished();
      if (segment > archive.through) this.#toArchive = undefined;
    }
  }

  /** A line was appended: compact once the file has grown by compactAfterLines and doubled. */
  wrote(): void {
    this.#lines++;
    const grown = this.#lines - this.#linesCompacted;
    if (grown > Math.max(this.#compactAfter, this.#linesCompacted) || this.#segmentDue()) {
      void this.#start();
    }
  }

  /** What waits for the next segment, its bytes counted. */
  #holdForSegment(lines: ArchivedLine[]): void {
    this.#toArchive = lines;
    this.#pendingBytes = pendingBytes(lines);
  }

  /** What left memory is enough for a segment: in records, or in bytes of the heap it holds. */
  #segmentDue(): boolean {
    const pending = this.#toArchive?.length ?? 0;
    return pending >= SEGMENT_RECORDS || this.#pendingBytes >= SEGMENT_BYTES;
  }

  /** A compaction that starts now, or once the one running ends; resolves when it is done. */
  async compact(): Promise<void> {
    await this.#compaction;
    await this.#start();
  }

  /** Compacts the file while it is written, unless it already is. */
  #start(): Promise<void> {
    if (this.#compaction || !this.#toArchive || this.#reader) {
      return this.#compaction ?? Promise.resolve();
    }
    this.#compaction = this.#compactLive()
      .then(
        async () => {
          const days = this.options.retainDays;
          if (days === undefined) return;
          await this.archive
            .forgetBefore(Date.now() - days * 86_400_000)
            .catch((error: unknown) => {
              this.#warn(`could not delete archive segments past ${days} days (${String(error)})`);
            });
        },
        (error: unknown) => {
          this.#linesCompacted = this.#lines;
          if (this.commits.fd !== undefined) {
            this.#warn(`could not compact the journal (${String(error)}); it is kept whole`);
          }
        },
      )
      .finally(() => {
        this.#compaction = undefined;
      });
    return this.#compaction;
  }

  /**
   * The file is rewritten to what is in memory, and what left memory goes to a segment. Appends
   * are held back only at the cut and the swap (which copies lines appended since); each record
   * sets a value, so one read twice changes nothing. Crash-safe: synced before the rename, the
   * old file holds everything until it.
   */
  async #compactLive(): Promise<void> {
    const { archive } = this;
    const commits = this.commits;
    const [file, next] = [this.file, this.#next];
    const step = this.options.onCompactionStep;
    let taken: ArchivedLine[] = [];
    const cut = await commits.exclusive(async () => {
      const fd = commits.fd;
      if (fd === undefined) return undefined;
      const { size } = await promisify(fstat)(fd);
      const snapshot = this.snapshot();
      taken = this.#toArchive ?? [];
      this.#holdForSegment([]);
      return { size, snapshot };
    });
    if (!cut) return;
    step?.("cut");
    const segment = taken.length > 0 ? archive.through + 1 : archive.through;
    let lines = 0;
    const counted = (chunk: string | Buffer) => {
      for (let at = chunk.indexOf("\n"); at >= 0; at = chunk.indexOf("\n", at + 1)) lines++;
    };
    try {
      await serving(this.#written(taken, segment, cut.snapshot, counted));
      const live = lines;
      const swapped = await commits.exclusive(async () => {
        const fd = commits.fd;
        if (fd === undefined) return false;
        // What was appended since the cut (a few groups), then the rename that commits it all.
        const tail = await readFrom(file, cut.size);
        counted(tail);
        await serving(fileSteps(next, [tail], "a"));
        step?.("tail");
        await rename(next, file);
        archive.through = segment;
        commits.fd = openSync(file, APPEND_FLAGS, 0o600);
        closeSync(fd);
        step?.("renamed");
        await serving(dirSteps(path.dirname(file)));
        step?.("synced");
        return true;
      });
      if (!swapped) throw new Error("the journal was closed while it was compacted");
      // The lines appended meanwhile count as growth: the next compaction comes sooner.
      [this.#lines, this.#linesCompacted] = [lines, live];
    } catch (error) {
      await rm(next, { force: true });
      // A segment for a compaction that did not commit: the old file still holds its records.
      if (segment > archive.through) archive.removeUnfinished();
      // The old file still holds what was taken for the segment: it goes to the next one.
      if (this.#toArchive) {
        this.#holdForSegment(taken.concat(this.#toArchive));
      }
      throw error;
    }
  }

  /** `taken` as segment `segment` (if any), then the live lines naming it in FILE.compact. */
  *#written(
    taken: readonly ArchivedLine[],
    segment: number,
    snapshot: Snapshot,
    count: (chunk: string) => void = () => undefined,
  ): Steps {
    const step = this.options.onCompactionStep;
    if (taken.length > 0) yield* this.archive.write(taken, segment);
    step?.("segment");
    yield* fileSteps(this.#next, told(chunked(liveLines(segment, snapshot)), count));
    step?.("written");
  }

  #warn(message: string): void {
    this.options.warn?.(`${this.file}: ${message}`);
  }
}

/** `items`, each told to `tell` as it goes by. */
function* told<T>(items: Iterable<T>, tell: (item: T) => void): Generator<T> {
  for (const item of items) {
    tell(item);
    yield item;
  }
}
