/**
 * The payers and payees an EVM payment names, for the deny list (deny-list/deny-list.ts): read from the
 * payload, never from a chain. A scheme that names them its own way says so (EvmScheme.parties);
 * otherwise the payer is the one every transfer method signs as: `authorization.from` (EIP-3009),
 * `authorization.owner` (EIP-2612), `permit2Authorization.from` (Permit2, upto).
 */
import type { Parties } from "../deny-list/deny-list.js";
import { type PaymentRequest, payerHint } from "../protocol/request.js";
import type { EvmScheme } from "./scheme.js";

export function evmParties(schemes: readonly EvmScheme[], request: PaymentRequest): Parties {
  const scheme = schemes.find((s) => s.name === request.requirements.scheme);
  if (scheme?.parties) return scheme.parties(request);
  const payer = payerHint({ payload: request.payload });
  return { payers: payer === undefined ? [] : [payer], payees: [] };
}
