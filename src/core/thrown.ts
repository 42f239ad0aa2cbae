/** What a thrown error means as an answer, and a chain failure named after its endpoints. */

import { FacilitatorError, type Failure, failure } from "../protocol/errors.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import { firstLine } from "../protocol/words.js";
import { isUnreachable, unreachableReason } from "../rpc/rpc-errors.js";

export function failureOfThrown(error: unknown, op: "verify" | "settle"): Failure {
  if (error instanceof FacilitatorError) return error.failure;
  if (isUnreachable(error)) {
    return failure(
      "chain_unavailable",
      `the RPC could not be reached (${unreachableReason(error)})`,
    );
  }
  const said = nodeErrorOf(error);
  if (said !== undefined) {
    return failure("chain_unavailable", `the RPC answered ${op} with an error (${said})`);
  }
  return failure("internal_error", `unexpected error during ${op}: ${firstLine(error)}`);
}

/** The node's own JSON-RPC error in `error` (read by shape): a chain failure, not internal_error. */
export function nodeErrorOf(error: unknown): string | undefined {
  const walk = (error as { walk?: unknown } | null)?.walk;
  if (typeof walk !== "function") return undefined;
  const answered = walk.call(error, isRpcRequestError) as RpcRequestError | null;
  if (!answered) return undefined;
  return `${answered.code}: ${firstLine(answered.details)}`;
}

type RpcRequestError = { name: string; code: number; details: string };

function isRpcRequestError(e: unknown): e is RpcRequestError {
  const r = e as Partial<RpcRequestError> | null;
  return (
    r?.name === "RpcRequestError" && typeof r.code === "number" && typeof r.details === "string"
  );
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
