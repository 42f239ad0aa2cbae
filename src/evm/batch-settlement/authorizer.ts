/**
 * Our receiver authorizer key, for a claim or refund that comes without the receiver authorizer's
 * signature: it signs only for channels that name it, and only when it is configured.
 */
import { type Address, isAddressEqual, type LocalAccount } from "viem";
import type { Failure } from "../../protocol/errors.js";
import type { EvmContext } from "../context.js";
import { rejected } from "./reasons.js";
import { BATCH_OWN } from "./settings.js";

export function ourAuthorizerFor(
  ctx: EvmContext,
  what: "claim" | "refund",
  named: readonly Address[],
): { ok: true; authorizer: LocalAccount } | { ok: false; failure: Failure } {
  const authorizer = ctx.own(BATCH_OWN).receiverAuthorizer;
  if (!authorizer) {
    return {
      ok: false,
      failure: rejected(
        "receiver_authorizer_unavailable",
        "authorizer_not_configured",
        `the ${what} carries no ${what}AuthorizerSignature, and this facilitator holds no receiver authorizer key to sign it`,
      ),
    };
  }
  const foreign = named.find((address) => !isAddressEqual(address, authorizer.address));
  if (foreign) {
    const whose = what === "claim" ? "a claimed channel's" : "the channel's";
    return {
      ok: false,
      failure: rejected(
        "receiver_authorizer_unavailable",
        "authorizer_address_mismatch",
        `${whose} receiverAuthorizer is ${foreign}, not this facilitator's ${authorizer.address}: sign the ${what} yourself`,
      ),
    };
  }
  return { ok: true, authorizer };
}
