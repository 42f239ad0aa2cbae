/** What a thrown error means as an answer: the node unreachable, or something unexpected. */
import { isUnreachable, unreachableReason } from "./chain/rpc.js";
import { FacilitatorError, type Failure, failure } from "./errors.js";

export function failureOfThrown(error: unknown, op: "verify" | "settle"): Failure {
  if (error instanceof FacilitatorError) return error.failure;
  if (isUnreachable(error)) {
    return failure(
      "chain_unavailable",
      `the RPC could not be reached (${unreachableReason(error)})`,
    );
  }
  const text = error instanceof Error ? error.message.split("\n")[0] : String(error);
  return failure("internal_error", `unexpected error during ${op}: ${text}`);
}
