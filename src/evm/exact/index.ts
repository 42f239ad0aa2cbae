/** The `exact` scheme on EVM chains: one module per way of moving the token. */

import { type Failure, failure } from "../../protocol/errors.js";
import { caip2, knownNetwork } from "../../protocol/networks.js";
import type { PaymentRequest } from "../../protocol/request.js";
import type { PaymentMethod } from "../context.js";
import type { EvmScheme } from "../scheme.js";
import { completeExact } from "./accepts.js";
import { eip3009 } from "./eip3009.js";
import { ERC20_APPROVAL_GAS_SPONSORING } from "./erc20-approval.js";
import { permit } from "./permit.js";
import { permit2Method } from "./permit2.js";
import { EIP2612_GAS_SPONSORING } from "./permit2-extensions.js";
import { exactPaymentMethod } from "./pipeline.js";

export const EXACT = "exact";

// As extra.assetTransferMethod names them; permit first: x402x permit payloads also carry an
// "authorization".
const methods = [permit, eip3009, exactPaymentMethod(permit2Method)];

/** The transfer methods `extra.assetTransferMethod` can name, as `/supported` declares them. */
export const EXACT_EVM_TRANSFER_METHODS = ["eip3009", "permit2"];

/** The payment extensions served, as `/supported` declares them. */
export const EXACT_EVM_EXTENSIONS = [EIP2612_GAS_SPONSORING, ERC20_APPROVAL_GAS_SPONSORING];

/** The method for this payload's shape, or why none: `extra.assetTransferMethod`, when present,
 * must name the payload's. */
export function exactEvmMethod(request: PaymentRequest): PaymentMethod | Failure {
  const { payload, paths } = request;
  if (payload.authorizationType === "permit2") {
    return failure(
      "unsupported_scheme",
      'x402x Permit2 payloads name payTo as the spender, so only payTo could settle them; sign a "permit2Authorization" for the x402 exact Permit2 proxy instead',
    );
  }
  const found = methods.find((m) => m.accepts(payload));
  if (!found) {
    return failure(
      "invalid_request",
      `${paths.payload}.payload must carry an EIP-3009 "authorization" or a "permit2Authorization", with its "signature"`,
    );
  }
  if (found.name === "permit2" && request.x402Version === 1) {
    return failure(
      "unsupported_scheme",
      "Permit2 payments are x402 v2 only; x402 v1 pays with EIP-3009 authorizations",
    );
  }
  // x402x names the method in requirements.paymentType.
  const named = [
    ["paymentType", (request.requirements as { paymentType?: unknown }).paymentType],
    ["extra.assetTransferMethod", request.requirements.extra?.assetTransferMethod ?? undefined],
  ] as const;
  for (const [field, value] of named) {
    if (value !== undefined && value !== found.name) {
      return failure(
        "transfer_method_mismatch",
        `${paths.requirements}.${field} is ${JSON.stringify(value).slice(0, 40)}, but the payload is a ${found.name} authorization`,
      );
    }
  }
  return found;
}

/** `exact` on EVM: x402 v1 (where the network has a v1 name) and v2, every transfer method. */
export const exactScheme: EvmScheme = {
  name: EXACT,
  extensions: EXACT_EVM_EXTENSIONS,
  method: exactEvmMethod,
  kinds(chainId) {
    const v1Name = knownNetwork(chainId)?.v1Name;
    return [
      ...(v1Name ? [{ x402Version: 1 as const, scheme: EXACT, network: v1Name }] : []),
      {
        x402Version: 2,
        scheme: EXACT,
        network: caip2(chainId),
        extra: { assetTransferMethods: EXACT_EVM_TRANSFER_METHODS },
      },
    ];
  },
  complete: completeExact,
};
