/** How a PostgreSQL error is answered: the store is unavailable, and whether the write certainly never happened. */
import { markNotRecorded, STORE_RETRY_AFTER_SECONDS } from "../core/store.js";
import { FacilitatorError } from "../protocol/errors.js";

export function unavailable(error: unknown): FacilitatorError {
  const text = error instanceof Error ? error.message.split("\n")[0] : String(error);
  const thrown = FacilitatorError.of(
    "store_unavailable",
    `the settlement store cannot be reached (${text}); nothing was sent`,
    { retryAfterSeconds: STORE_RETRY_AFTER_SECONDS },
  );
  // No connection could be made: the statement never reached the server. A connection lost
  // mid-statement leaves it unknown whether it was applied.
  const code = (error as { code?: string }).code;
  const neverSent =
    code === "ECONNREFUSED" ||
    code === "ENOTFOUND" ||
    code === "EHOSTUNREACH" ||
    /timeout exceeded when trying to connect|connection timeout/i.test(text ?? "");
  return neverSent ? markNotRecorded(thrown) : thrown;
}
