import type { ErrorCode } from "../../protocol/errors.js";

/** A problem with how the command was called or with its input files: exit status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  /** The code of the JSON answer: `invalid_request`, unless a finer one fits (`key_in_use`). */
  readonly code: ErrorCode;

  constructor(message: string, code: ErrorCode = "invalid_request") {
    super(message);
    this.code = code;
  }
}

/** A flag's whole number, 0 to `max`. */
export function wholeFlag(value: string, flag: string, max: number): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0 || n > max) {
    throw new UsageError(`${flag} must be a whole number up to ${max}`);
  }
  return n;
}

/** Whether listening failed because something else holds the port (Node's code, or anvil's words). */
export const isPortTaken = (error: unknown): boolean =>
  error instanceof Error &&
  ((error as NodeJS.ErrnoException).code === "EADDRINUSE" ||
    /address already in use/i.test(error.message));

/** A command's action: `load` imports its work only when it runs; what that returns, the exit status. */
export const runLoaded =
  <A extends unknown[]>(load: () => Promise<(...args: A) => Promise<number>>) =>
  async (...args: A) => {
    process.exitCode = await (await load())(...args);
  };
