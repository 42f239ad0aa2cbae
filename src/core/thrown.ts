/**
 * What a thrown error means as an answer (the node unreachable, or something unexpected), and a
 * chain failure named after the network and the endpoints it went through.
 */

import { FacilitatorError, type Failure, failure } from "../protocol/errors.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import { isUnreachable, unreachableReason } from "./rpc.js";

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

/** A chain_unavailable result, prefixed with the request's network and the endpoints behind it. */
export function namingEndpoint<R extends VerifyResult | SettleResult>(
  result: R,
  network: string,
  via: string | undefined,
): R {
  if (result.ok || result.failure.code !== "chain_unavailable") return result;
  const where = `${network} via ${via ?? "its RPC"}`;
  return {
    ...result,
    failure: { ...result.failure, message: `${where}: ${result.failure.message}` },
  };
}
