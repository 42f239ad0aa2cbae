/**
 * The deny list's file (`--deny-list`, FACILITATOR_DENY_LIST, `denyList` in the config file): one
 * EVM or Solana address a line, `#` for comments. Read whole and checked at start (a bad line is a
 * usage error, by number); serve re-reads it when it changes (watched-file.ts).
 */
import { statSync } from "node:fs";
import path from "node:path";
import { DenyList, parseDenyList } from "../core/deny-list.js";
import { InputError, readPathBounded } from "./bounded-read.js";
import { UsageError } from "./errors.js";

/** 1,000,000 addresses of up to 44 characters, with room for comments. */
const DENY_LIST_LIMIT_BYTES = 64 * 1024 * 1024;

export interface LoadedDenyList {
  readonly list: DenyList;
  /** When the file was last changed (ms since the epoch): doctor shows the list's age. */
  readonly modifiedMs: number;
}

export function readDenyList(file: string): LoadedDenyList {
  const where = `the deny list ${file}`;
  let modifiedMs: number;
  try {
    const stat = statSync(file);
    // Re-read whenever it changes: a pipe could be read only once.
    if (!stat.isFile()) throw new UsageError(`${where} must be a file`);
    modifiedMs = stat.mtimeMs;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`cannot read ${where}: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  let text: string;
  try {
    text = readPathBounded(file, { maxBytes: DENY_LIST_LIMIT_BYTES, idleTimeoutMs: 0 }).toString(
      "utf8",
    );
  } catch (error) {
    if (error instanceof InputError) throw new UsageError(`cannot read ${where}: ${error.reason}`);
    throw error;
  }
  const parsed = parseDenyList(text, path.basename(file));
  if (!(parsed instanceof DenyList)) throw new UsageError(`${where}: ${parsed.error}`);
  return { list: parsed, modifiedMs };
}
