/**
 * A claim: the receiver side records what vouchers entitle it to, for one or many channels. It
 * goes out in a batch with the claims that arrive with it (batcher.ts).
 */
import type { PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { batcherOf } from "./batcher.js";
import { learnClaims } from "./claim-call.js";
import { claimSchema, parsePayload } from "./payload.js";

export async function settleClaim(
  ctx: EvmContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const parsed = parsePayload(request, claimSchema);
  if (!parsed.ok) return parsed;
  const { claims, claimAuthorizerSignature } = parsed.value;
  const sent = await batcherOf(ctx).claim(
    ctx,
    { rows: claims, signature: claimAuthorizerSignature, payment: request },
    waitUntil,
  );
  if (!sent.ok) return sent.result;
  learnClaims(ctx, claims);
  return { ok: true, payer: "", transactionHash: sent.hash };
}
