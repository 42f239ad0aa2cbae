/**
 * The journal's archive: settled history that left memory, in numbered segments beside the
 * journal (`FILE.archive/000001.jsonl`), so lookups still answer while start-up reads only the
 * live file. A segment is a header line (its time range) and one JSON record a line, with an index
 * (`000001.idx`): an open-addressing table of 16-byte slots (8 bytes of sha256 of a term, 8 of the
 * record's offset + 1). A segment counts only once the live file names it (never a record twice).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { type FileHandle, open, readdir, rm } from "node:fs/promises";
import path from "node:path";
import type { JournalEntry } from "../core/store.js";
import { chunked, dirSteps, fileSteps, type Steps, serving } from "./journal-file.js";

/** A settled entry, as the archive (and a compacted journal) writes it down whole. */
export interface EntryLine extends Omit<JournalEntry, "raws"> {
  readonly t: "entry";
}
/** What a payment-identifier is bound to, and the answer kept for it. */
export interface IdBound {
  readonly fingerprint: string;
  readonly answer?: unknown;
  /** When it was bound or answered (unix ms). */
  readonly at?: number | undefined;
}
export type ArchivedLine = EntryLine | ({ readonly t: "id"; readonly id: string } & IdBound);

interface SegmentHeader {
  readonly t: "segment";
  /** The oldest and newest settlement time in it (unix ms). */
  readonly from: number;
  readonly to: number;
}

const SLOT = 16;
const HEADER = 16;
const MAGIC = "fjidx1\n\n";

/** The terms an archived record is found by: its key, its transactions, its identifier. */
export function termsOf(line: ArchivedLine): string[] {
  return line.t === "id"
    ? [`i:${line.id}`]
    : [`k:${line.key}`, ...line.hashes.map((h) => `h:${h}`)];
}

function fingerprint(term: string): Buffer {
  const digest = createHash("sha256").update(term).digest().subarray(0, 8);
  // An all-zero fingerprint would read as an empty slot.
  if (digest.every((b) => b === 0)) digest[7] = 1;
  return digest;
}

const slotOf = (print: Buffer, slots: number) => print.readUInt32BE(4) & (slots - 1);

/** A segment's records (its header first), each term put in `index` as its record is made. */
function segment(lines: readonly ArchivedLine[]): { records: Generator<string>; index: Buffer } {
  let from = Date.now();
  let to = 0;
  for (const l of lines) {
    const at = (l.t === "id" ? l.at : l.updatedAt) ?? 0;
    if (at > 0 && at < from) from = at;
    if (at > to) to = at;
  }
  const header: SegmentHeader = { t: "segment", from, to };
  const terms = lines.reduce((n, l) => n + termsOf(l).length, 0);
  let slots = 2;
  while (slots < terms * 2) slots *= 2;
  const index = Buffer.alloc(HEADER + slots * SLOT);
  index.write(MAGIC, 0, "latin1");
  index.writeUInt32BE(slots, 8);
  index.writeUInt32BE(terms, 12);
  function* records(): Generator<string> {
    const first = `${JSON.stringify(header)}\n`;
    yield first;
    let offset = Buffer.byteLength(first);
    for (const line of lines) {
      for (const term of termsOf(line)) {
        const print = fingerprint(term);
        let slot = slotOf(print, slots);
        while (index.readBigUInt64BE(HEADER + slot * SLOT + 8) !== 0n) slot = (slot + 1) % slots;
        print.copy(index, HEADER + slot * SLOT);
        index.writeBigUInt64BE(BigInt(offset + 1), HEADER + slot * SLOT + 8);
      }
      const text = `${JSON.stringify(line)}\n`;
      yield text;
      offset += Buffer.byteLength(text);
    }
  }
  return { records: records(), index };
}

export class JournalArchive {
  readonly #dir: string;
  /** Segments named by the live file (1 to `through`); beyond it, an unfinished compaction's. */
  through = 0;

  constructor(file: string) {
    this.#dir = `${file}.archive`;
  }

  #path(n: number, ext: string): string {
    return path.join(this.#dir, `${String(n).padStart(6, "0")}.${ext}`);
  }

  /** Deletes what an unfinished compaction left: segments past `through`, temporary files. */
  removeUnfinished(): void {
    let names: string[];
    try {
      names = readdirSync(this.#dir);
    } catch {
      return;
    }
    for (const name of names) {
      const n = Number.parseInt(name, 10);
      if (name.endsWith(".tmp") || !(n <= this.through)) rmSync(path.join(this.#dir, name));
    }
  }

  /** Writes segment `n` (synced, renamed into place); it counts once the live file names it. */
  *write(lines: readonly ArchivedLine[], n: number): Steps {
    mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
    const { records, index } = segment(lines);
    const [jsonl, idx] = [this.#path(n, "jsonl"), this.#path(n, "idx")];
    yield* fileSteps(`${jsonl}.tmp`, chunked(records));
    yield* fileSteps(`${idx}.tmp`, [index]);
    renameSync(`${idx}.tmp`, idx);
    renameSync(`${jsonl}.tmp`, jsonl);
    yield* dirSteps(this.#dir);
  }

  /** The segments that count, newest first. */
  async #segments(): Promise<number[]> {
    const names = await readdir(this.#dir).catch(() => [] as string[]);
    return names
      .filter((name) => name.endsWith(".jsonl"))
      .map((name) => Number.parseInt(name, 10))
      .filter((n) => n >= 1 && n <= this.through)
      .sort((a, b) => b - a);
  }

  /** The newest archived record found by `term` (`k:KEY`, `h:HASH`, `i:ID`), if any. */
  async find(term: string): Promise<ArchivedLine | undefined> {
    const print = fingerprint(term);
    for (const n of await this.#segments()) {
      const found = await this.#findIn(n, term, print).catch(() => undefined);
      if (found) return found;
    }
    return undefined;
  }

  async #findIn(n: number, term: string, print: Buffer): Promise<ArchivedLine | undefined> {
    const idx = await open(this.#path(n, "idx"), "r");
    const records = await open(this.#path(n, "jsonl"), "r");
    try {
      const head = Buffer.alloc(HEADER);
      await idx.read(head, 0, HEADER, 0);
      if (head.toString("latin1", 0, 8) !== MAGIC) return undefined;
      const slots = head.readUInt32BE(8);
      const slot = Buffer.alloc(SLOT);
      let found: ArchivedLine | undefined;
      // Every record of the term in this segment: the last one written is the newest.
      for (let at = slotOf(print, slots), seen = 0; seen < slots; at = (at + 1) % slots, seen++) {
        await idx.read(slot, 0, SLOT, HEADER + at * SLOT);
        const offset = slot.readBigUInt64BE(8);
        if (offset === 0n) break;
        if (!slot.subarray(0, 8).equals(print)) continue;
        const line = await readLineAt(records, Number(offset - 1n));
        if (line && termsOf(line).includes(term)) found = line;
      }
      return found;
    } finally {
      await Promise.all([idx.close(), records.close()]);
    }
  }

  /** When the oldest settlement the archive keeps was made (unix ms), if it keeps any. */
  async oldest(): Promise<number | undefined> {
    const first = (await this.#segments()).at(-1);
    if (first === undefined) return undefined;
    return (await this.#header(first))?.from;
  }

  async #header(n: number): Promise<SegmentHeader | undefined> {
    const records = await open(this.#path(n, "jsonl"), "r").catch(() => undefined);
    if (!records) return undefined;
    try {
      return (await readLineAt(records, 0)) as unknown as SegmentHeader | undefined;
    } finally {
      await records.close();
    }
  }

  /** Deletes the segments whose newest settlement is older than `before` (unix ms), oldest first. */
  async forgetBefore(before: number): Promise<number> {
    let forgotten = 0;
    for (const n of (await this.#segments()).reverse()) {
      const header = await this.#header(n);
      if (!header || header.to >= before) break;
      await rm(this.#path(n, "jsonl"), { force: true });
      await rm(this.#path(n, "idx"), { force: true });
      forgotten++;
    }
    if (forgotten > 0) await serving(dirSteps(this.#dir));
    return forgotten;
  }
}

/** The JSON line starting at `offset`. */
async function readLineAt(file: FileHandle, offset: number): Promise<ArchivedLine | undefined> {
  let text = "";
  const buffer = Buffer.alloc(8192);
  for (let at = offset; ; ) {
    const { bytesRead } = await file.read(buffer, 0, buffer.length, at);
    if (bytesRead === 0) break;
    const chunk = buffer.subarray(0, bytesRead);
    const end = chunk.indexOf(0x0a);
    text += chunk.subarray(0, end < 0 ? bytesRead : end).toString("utf8");
    if (end >= 0) break;
    at += bytesRead;
  }
  try {
    return JSON.parse(text) as ArchivedLine;
  } catch {
    return undefined;
  }
}
