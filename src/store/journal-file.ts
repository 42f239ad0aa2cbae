/** The journal file: read a line at a time, rewritten whole, and where it lives by default. */
import {
  closeSync,
  constants,
  createReadStream,
  fstatSync,
  fsync,
  fsyncSync,
  openSync,
  readSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import { setImmediate } from "node:timers/promises";
import { promisify } from "node:util";
import type { WriteBytes } from "./journal-commit.js";

export const APPEND_FLAGS =
  constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | (constants.O_DSYNC ?? 0);

/** A compaction's steps (journal-history.ts), in order. */
export type CompactionStep = "cut" | "segment" | "written" | "tail" | "renamed" | "synced";

export interface JournalOptions {
  /** Compact once the file grew by this many lines (Infinity for a reader: status, doctor). */
  readonly compactAfterLines?: number | undefined;
  /** Archive segments older than this many days are deleted after a compaction. */
  readonly retainDays?: number | undefined;
  /** Settled entries kept in memory (Journal.SETTLED_IN_MEMORY). */
  readonly settledInMemory?: number | undefined;
  /** Told of torn lines skipped while reading (a write cut short by a crash or a full disk). */
  readonly warn?: ((message: string) => void) | undefined;
  /** Tests only: told of each step of a compaction while serving (a crash image there). */
  readonly onCompactionStep?: ((step: CompactionStep) => void) | undefined;
  /** Tests only: the group commit's write (one that stops short, where no disk can fill). */
  readonly write?: WriteBytes | undefined;
}

/** A line's records, and whether it was torn (a record glued to a torn one is still read). */
function recordOf(line: string): { record?: unknown; torn: boolean } {
  try {
    return { record: JSON.parse(line), torn: false };
  } catch {
    for (let at = line.indexOf('{"t":', 1); at > 0; at = line.indexOf('{"t":', at + 1)) {
      try {
        const record = JSON.parse(line.slice(at)) as { t?: unknown };
        if (typeof record.t === "string") return { record, torn: true };
      } catch {
        // Not where the glued record starts: a later one may be.
      }
    }
    return { torn: true };
  }
}

/** Hands every record of the file to `apply`, in order, torn lines told to `warn`; answers the line count. */
export function replay(
  file: string,
  apply: (record: unknown) => void,
  warn?: (message: string) => void,
): number {
  let lines = 0;
  const torn: number[] = [];
  const take = (line: string) => {
    if (!line.trim()) return;
    lines++;
    const { record, torn: isTorn } = recordOf(line);
    if (isTorn) torn.push(lines);
    try {
      if (record !== undefined) apply(record);
    } catch {
      // A record this version cannot apply: the others still count.
    }
  };
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
  try {
    // A megabyte at a time: a long journal never becomes one string.
    const buffer = Buffer.alloc(1 << 20);
    const decoder = new StringDecoder("utf8");
    let rest = "";
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      const parts = (rest + decoder.write(buffer.subarray(0, read))).split("\n");
      rest = parts.pop() ?? "";
      parts.forEach(take);
    }
    take(rest);
  } finally {
    closeSync(fd);
  }
  if (torn.length > 0) {
    const which = `${torn.slice(0, 5).join(", ")}${torn.length > 5 ? ", ..." : ""}`;
    warn?.(
      `${file}: skipped ${torn.length} torn line(s) (line ${which}), left by a write cut short; every whole record was read`,
    );
  }
  return lines;
}

/** Writing a file as steps: a pause after each chunk, then its descriptor to sync (atOnce, serving). */
export type Steps = Generator<number | undefined>;

/** Writes `chunks` to `file` (opened with `flags`), then syncs and closes it. */
export function* fileSteps(file: string, chunks: Iterable<string | Buffer>, flags = "w"): Steps {
  const fd = openSync(file, flags, 0o600);
  try {
    for (const chunk of chunks) {
      writeFileSync(fd, chunk);
      yield;
    }
    yield fd;
  } finally {
    closeSync(fd);
  }
}

/** Syncs the directory `dir`, so a rename in it lasts. */
export const dirSteps = (dir: string): Steps => fileSteps(dir, [], "r");

/** `texts` joined into chunks of 256 KiB or so: what is written between two turns of the event loop. */
export function* chunked(texts: Iterable<string>): Generator<string> {
  let chunk = "";
  for (const text of texts) {
    chunk += text;
    if (chunk.length < 256 * 1024) continue;
    yield chunk;
    chunk = "";
  }
  if (chunk) yield chunk;
}

/** Runs `steps` at once (while the journal is opened). */
export function atOnce(steps: Steps): void {
  for (const fd of steps) if (fd !== undefined) fsyncSync(fd);
}

/** Runs `steps` while serving: the event loop turns between chunks, and syncs on the thread pool. */
export async function serving(steps: Steps): Promise<void> {
  for (const fd of steps) await (fd === undefined ? setImmediate() : promisify(fsync)(fd));
}

/** Reads `file` from `offset` to its end (a file whose writes are held meanwhile). */
export async function readFrom(file: string, offset: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of createReadStream(file, { start: offset })) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

export function endsMidLine(file: string): boolean {
  const fd = openSync(file, "r");
  try {
    const { size } = fstatSync(fd);
    if (size === 0) return false;
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] !== 0x0a;
  } finally {
    closeSync(fd);
  }
}

/** `$XDG_STATE_HOME/facilitator/journal.jsonl`, else `~/.local/state/facilitator/journal.jsonl`. */
export function defaultJournalPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME || path.join(os.homedir(), ".local", "state");
  return path.join(base, "facilitator", "journal.jsonl");
}
