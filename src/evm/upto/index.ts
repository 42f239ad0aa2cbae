/** The `upto` scheme on EVM chains: Permit2 through the x402 upto proxy, settling what was used. */

import type { PaymentMethod } from "../../core/scheme.js";
import { type Failure, failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import { exactPaymentMethod } from "../exact/pipeline.js";
import { UPTO, uptoMethod } from "./upto.js";

export { UPTO };

const upto = exactPaymentMethod(uptoMethod);

/** The method for an `upto` payment, or why there is none. */
export function uptoEvmMethod(request: PaymentRequest): PaymentMethod | Failure {
  if (request.x402Version !== 2) {
    return failure("unsupported_version", "the upto scheme is x402 v2 only");
  }
  if (!upto.accepts(request.payload)) {
    return failure(
      "invalid_request",
      `${request.paths.payload}.payload must carry a "permit2Authorization" for the upto proxy, with its "signature"`,
    );
  }
  return upto;
}
