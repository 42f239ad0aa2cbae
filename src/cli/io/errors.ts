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

/** Whether listening failed because something else holds the port (Node's code, or anvil's words). */
export const isPortTaken = (error: unknown): boolean =>
  error instanceof Error &&
  ((error as NodeJS.ErrnoException).code === "EADDRINUSE" ||
    /address already in use/i.test(error.message));

/** What `devnet` and `serve` say of a taken port: whose it may be, and how to get another. */
export const portTakenMessage = (port: number, holder: string, free: string): string =>
  `--port ${port} is taken (${holder}?): pick another, or ${free}`;
