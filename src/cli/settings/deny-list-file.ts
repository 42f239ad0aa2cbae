/** The deny list file, failing closed: a half-written file must never read as a shorter list. */
import path from "node:path";
import { DenyList, parseDenyList } from "../../deny-list/deny-list.js";
import { readRegularFile } from "../io/bounded-read.js";
import { UsageError } from "../io/errors.js";

/** 1,000,000 addresses of up to 44 characters, with room for comments. */
const DENY_LIST_LIMIT_BYTES = 64 * 1024 * 1024;

/** The line that says a list of no address is meant to be empty. */
const EMPTY_MARKER = "# empty";

/** The list, and when its file was last changed (ms since the epoch): doctor shows its age. */
export function readDenyList(file: string) {
  const where = `the deny list ${file}`;
  const { text, modifiedMs } = readRegularFile(file, DENY_LIST_LIMIT_BYTES, where);
  if (text === "") {
    throw new UsageError(
      `${where} is empty (being written?); a list meant to be empty holds the line "${EMPTY_MARKER}"`,
    );
  }
  if (!text.endsWith("\n")) {
    throw new UsageError(
      `${where} does not end with a newline: it is being written, or was cut; end its last line with a newline`,
    );
  }
  const parsed = parseDenyList(text, path.basename(file));
  if (!(parsed instanceof DenyList)) throw new UsageError(`${where}: ${parsed.error}`);
  if (parsed.size === 0 && !text.split(/\r?\n/).some((line) => line.trim() === EMPTY_MARKER)) {
    throw new UsageError(
      `${where} holds no address; a list meant to be empty holds the line "${EMPTY_MARKER}"`,
    );
  }
  return { list: parsed, modifiedMs };
}
