/** `upto` on EVM (x402 v2): Permit2 for a maximum via the x402 upto proxy, whose witness names
 * the one facilitator that may settle; settle moves `requirements.amount` (at most the maximum).
 * Checks in the reference SDK's order with its reasons. */
import { requiredAmount } from "../../core/amount-floor.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { PaymentMethod } from "../context.js";
import { address, uint256 } from "../exact/fields.js";
import { permit2MethodOf, permit2Payload } from "../exact/permit2.js";
import { proxySettleCalldata } from "../exact/permit2-encoding.js";
import { exactPaymentMethod } from "../exact/pipeline.js";
import type { EvmScheme } from "../scheme.js";
import {
  UPTO_PERMIT2_PROXY_ADDRESS,
  type UptoAuthorization,
  uptoDigest,
  uptoProxyAbi,
} from "./encoding.js";

export const UPTO = "upto";

const uptoMethod = permit2MethodOf<UptoAuthorization>({
  scheme: UPTO,
  reasons: { scheme: "invalid_upto_evm_scheme", network: "invalid_upto_evm_network_mismatch" },
  proxy: UPTO_PERMIT2_PROXY_ADDRESS,
  abi: uptoProxyAbi,
  use: "upto",
  use2612: "uptoEip2612",
  subject: "the upto authorization",
  assetSubject: "the authorization",
  settlement: "upto",
  schema: permit2Payload({ to: address, facilitator: address, validAfter: uint256 }),
  digest: uptoDigest,
  calldata: (auth, amount, signature, permit2612) =>
    proxySettleCalldata(uptoProxyAbi, auth, [amount], signature, permit2612),
  // Without settlement keys (verify from the CLI) whose authorization it is cannot be told.
  witness: (ctx, { witness }) =>
    ctx.signers.size > 0 && !ctx.signers.byAddress(witness.facilitator)
      ? failure(
          "facilitator_mismatch",
          `the witness names ${witness.facilitator} as the facilitator; this one settles as ${ctx.signers.addresses.join(", ")}`,
        )
      : null,
  amount(max, asked, settling) {
    if (settling && asked > max) {
      return failure(
        "amount_mismatch",
        `settling ${asked} is more than the ${max} the payer signed for`,
        { x402Reason: "invalid_upto_evm_payload_settlement_exceeds_amount" },
      );
    }
    if (!settling && max !== asked) {
      return failure(
        "amount_mismatch",
        `the upto authorization is for at most ${max}, the requirements ask for ${asked}`,
        { x402Reason: "permit2_amount_mismatch" },
      );
    }
    return null;
  },
  settler: (auth) => auth.witness.facilitator,
  named(error) {
    if (error === "UnauthorizedFacilitator") {
      return failure("facilitator_mismatch", "the upto proxy refuses this facilitator", {
        x402Reason: "upto_unauthorized_facilitator",
      });
    }
    if (error === "AmountExceedsPermitted") {
      return failure("amount_mismatch", "the amount is more than the payer permitted", {
        x402Reason: "upto_amount_exceeds_permitted",
      });
    }
    return undefined;
  },
  asked: () => true,
  revertedReason: "invalid_upto_evm_transaction_failed",
});

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

/** The witness names the settling facilitator, so each kind names one of our signers in turn, as
 * the reference names its own; none without a signer. */
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
