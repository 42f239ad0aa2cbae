/** A first settle's gas estimate (its simulation), asked beside verify's reads, not after. */
import type { PaymentRequest } from "../../protocol/request.js";
import { credited } from "../chain/builder-code.js";
import { type ContractCall, sentData } from "../chain/outcome.js";
import type { EvmContext } from "../context.js";
import type { ExactMethod } from "./method.js";

/** The payload's call estimated from the one settlement key; used if verify names the same call. */
export function estimateEarly<P>(
  method: ExactMethod<P>,
  ctx: EvmContext,
  payment: P,
  request: PaymentRequest,
): { call: ContractCall; gas: Promise<bigint> } | undefined {
  const [lane, ...others] = ctx.signers.lanes;
  const plain = method.plainCall?.(ctx, payment);
  if (!lane || others.length > 0 || !plain) return undefined;
  const call = credited(ctx.builderCode, plain, request);
  const gas = ctx.client.estimateGas({ account: lane.address, to: call.to, data: sentData(call) });
  gas.catch(() => undefined);
  return { call, gas };
}

export const sameCall = (a: ContractCall, b: ContractCall) =>
  a.to.toLowerCase() === b.to.toLowerCase() && a.data === b.data && a.suffix === b.suffix;
