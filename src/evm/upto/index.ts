/** The `upto` scheme on EVM chains: Permit2 through the x402 upto proxy, settling what was used. */

import { requiredAmount } from "../../core/amount-floor.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { PaymentMethod } from "../context.js";
import { exactPaymentMethod } from "../exact/pipeline.js";
import type { EvmScheme } from "../scheme.js";
import { UPTO, uptoMethod } from "./upto.js";

const upto = exactPaymentMethod(uptoMethod);

/** The method for an `upto` payment, or why there is none. */
function uptoEvmMethod(request: PaymentRequest): PaymentMethod | Failure {
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

/**
 * `upto` on EVM (x402 v2): the witness must name the facilitator that settles, so each kind names
 * one of our signers, in turn, as the reference names one of its own; none without a signer.
 */
export const uptoScheme: EvmScheme = {
  name: UPTO,
  method: uptoEvmMethod,
  // A settle of zero (nothing was used) moves nothing and sends nothing: the reference's answer.
  moves(request, op) {
    const moved = requiredAmount(request);
    return op === "settle" && moved?.amount === 0n ? "nothing" : moved;
  },
  kinds(chainId, host) {
    const facilitatorAddress = host.nextSigner();
    if (!facilitatorAddress) return [];
    return [
      { x402Version: 2, scheme: UPTO, network: caip2(chainId), extra: { facilitatorAddress } },
    ];
  },
};
