/**
 * What an EVM payment moves, for the rule against payments of nothing and the operator's minimums
 * (core/amount-floor.ts), read from the request alone: `requirements.amount`, which the signed
 * value must equal (exact) or which is the signed maximum at verify and what is settled at settle
 * (upto), unless the scheme reads it its own way (EvmScheme.moves).
 */
import { requiredAmount } from "../core/amount-floor.js";
import type { Moved } from "../core/family.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { EvmScheme } from "./scheme.js";

export function evmMoves(
  scheme: EvmScheme,
  request: PaymentRequest,
  op: "verify" | "settle",
  network: string,
): Moved | "nothing" | undefined {
  const moved = scheme.moves ? scheme.moves(request, op) : requiredAmount(request);
  if (moved === undefined || moved === "nothing") return moved;
  return { ...moved, network, asset: request.requirements.asset };
}
