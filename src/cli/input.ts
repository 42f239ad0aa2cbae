/** Reading the request from a file or stdin: bounded in size and time, never waiting on a terminal. */
import {
  InputError,
  inputTimeoutMs,
  REQUEST_LIMIT_BYTES,
  readPathBounded,
  readStdinBounded,
} from "./bounded-read.js";
import { UsageError } from "./errors.js";

export async function readSource(file: string | undefined): Promise<string> {
  const limits = { maxBytes: REQUEST_LIMIT_BYTES, idleTimeoutMs: inputTimeoutMs() };
  const stdin = file === undefined || file === "-";
  try {
    const bytes = stdin ? await readStdinBounded(limits) : readPathBounded(file, limits);
    return bytes.toString("utf8");
  } catch (error) {
    if (error instanceof InputError) {
      throw new UsageError(`cannot read ${stdin ? "stdin" : file}: ${error.reason}`);
    }
    throw error;
  }
}
