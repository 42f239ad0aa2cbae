/** Reading the request from a file or stdin: bounded in size and time, never waiting on a terminal. */
import { fstatSync } from "node:fs";
import { parseJson, parseRequest } from "../../protocol/request.js";
import { isObject } from "../../protocol/words.js";
import {
  InputError,
  inputTimeoutMs,
  REQUEST_LIMIT_BYTES,
  readPathBounded,
  readStdinBounded,
} from "./bounded-read.js";
import { UsageError } from "./errors.js";

export const isStdin = (file: string | undefined) => file === undefined || file === "-";

export async function readSource(file: string | undefined): Promise<string> {
  const limits = { maxBytes: REQUEST_LIMIT_BYTES, idleTimeoutMs: inputTimeoutMs() };
  const stdin = isStdin(file);
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

/** The JSON in `file` (- or none: stdin); not JSON: a usage error, named as `named`. */
export async function readJson(file: string | undefined, named: string): Promise<unknown> {
  const parsed = parseJson(await readSource(file));
  if (!parsed.ok) throw new UsageError(`${named}: ${parsed.failure.message}`);
  return parsed.value;
}

/** The payment request in `file`, as readJson reads it; not a request: a usage error too. */
export async function readRequest(file: string | undefined, named: string) {
  const parsed = parseRequest(await readJson(file, named));
  if (!parsed.ok) throw new UsageError(`${named}: ${parsed.failure.message}`);
  return parsed.request;
}

/** Whether stdin is a pipe (a shell's, or a parent's socket): empty, the writer most likely failed. */
function stdinIsPipe(): boolean {
  try {
    const stat = fstatSync(0);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false;
  }
}

/** What a failed command before the pipe left on stdin: a line, and its answer to pass on. */
export function pipedFailure(
  text: string,
  parsed: unknown,
): { message: string; answer?: Record<string, unknown> } | undefined {
  if (text.trim() === "") {
    return {
      message: stdinIsPipe()
        ? "nothing on stdin: did the command before the pipe fail?"
        : "nothing on stdin: pass a FILE, or pipe the JSON request on stdin",
    };
  }
  if (!isObject(parsed)) return undefined;
  const answer = parsed;
  if ("payload" in answer || "paymentPayload" in answer) return undefined;
  const code =
    answer.success === false
      ? (answer.error ?? answer.errorReason)
      : answer.isValid === false
        ? answer.invalidReason
        : undefined;
  if (typeof code !== "string") return undefined;
  return {
    message: `stdin holds a failure answer (${code.slice(0, 60)}), not a request: did the command before the pipe fail?`,
    answer,
  };
}
