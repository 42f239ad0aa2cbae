/** The `exact` scheme on EVM chains: one module per way of moving the token. */
import { type Failure, failure } from "../../errors.js";
import type { PaymentMethod } from "../types.js";
import { eip3009 } from "./eip3009.js";

export const EXACT = "exact";

const methods: readonly PaymentMethod[] = [eip3009];

/** The method for this payload's shape, or why there is none. */
export function exactEvmMethod(
  payload: Readonly<Record<string, unknown>>,
  payloadPath: string,
): PaymentMethod | Failure {
  const method = methods.find((m) => m.accepts(payload));
  if (method) return method;
  if ("permit2Authorization" in payload) {
    return failure(
      "unsupported_scheme",
      "Permit2 payments (permit2Authorization) are not supported yet; EIP-3009 authorizations are",
    );
  }
  return failure(
    "invalid_request",
    `${payloadPath}.payload must carry an EIP-3009 "authorization" and its "signature"`,
  );
}
