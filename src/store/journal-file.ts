/** The journal file: read a line at a time, and where it lives by default. */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";

/** The file's lines, read a megabyte at a time (a long journal never becomes one string). */
export function* readLines(file: string): Generator<string> {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    const buffer = Buffer.alloc(1 << 20);
    const decoder = new StringDecoder("utf8");
    let rest = "";
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, null);
      if (read === 0) break;
      const lines = (rest + decoder.write(buffer.subarray(0, read))).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) if (line.trim()) yield line;
    }
    if (rest.trim()) yield rest;
  } finally {
    closeSync(fd);
  }
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
