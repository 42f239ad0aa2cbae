/** Failures as values, built on the one error table (re-exported: callers import one module). */
import { ERRORS, type ErrorCode } from "./error-table.js";

export { ERRORS, type ErrorCode, type ErrorSpec } from "./error-table.js";

/** A failed outcome: failures are values; only infrastructure trouble throws, then becomes one. */
export interface Failure {
  readonly code: ErrorCode;
  /** Human explanation, naming the field or the values involved. */
  readonly message: string;
  /** Overrides the table's status (a `settlement_failed` that is not the payment's fault is 500). */
  readonly status?: number;
  /** Overrides the table's x402 reason where the reference uses a finer one. */
  readonly x402Reason?: string;
  /** When a retry may succeed, in seconds: sent as `Retry-After` over HTTP. */
  readonly retryAfterSeconds?: number;
  /** Which refusal of the node's it ended on, when one (the access log says it). */
  readonly refusal?: string | undefined;
}

export function failure(
  code: ErrorCode,
  message: string = ERRORS[code].summary,
  extra: Omit<Failure, "code" | "message"> = {},
): Failure {
  return { code, message, ...extra };
}

/** A failed outcome as a result: `{ ok: false, failure }`, of a Failure or of one built here. */
export const failed = (
  f: ErrorCode | Failure,
  message?: string,
  extra?: Omit<Failure, "code" | "message">,
) => ({ ok: false, failure: typeof f === "string" ? failure(f, message, extra) : f }) as const;

/** A JSON answer, or the failure answered instead (POST /accepts, GET /discovery). */
export type Answer =
  | { readonly ok: true; readonly body: Record<string, unknown> }
  | { readonly ok: false; readonly failure: Failure };

export function statusOf(f: Failure): number {
  return f.status ?? ERRORS[f.code].status;
}

export function x402ReasonOf(f: Failure): string {
  return f.x402Reason ?? ERRORS[f.code].x402;
}

/** Thrown for conditions that end an operation early; carries a Failure. */
export class FacilitatorError extends Error {
  override readonly name = "FacilitatorError";
  readonly failure: Failure;

  constructor(f: Failure, options?: { cause?: unknown }) {
    super(f.message, options);
    this.failure = f;
  }

  static of(code: ErrorCode, message?: string, extra?: Omit<Failure, "code" | "message">) {
    return new FacilitatorError(failure(code, message, extra));
  }
}
