import type { ErrorCode } from "../protocol/errors.js";

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
