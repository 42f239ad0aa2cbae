/**
 * A claim: the receiver side records what vouchers entitle it to, for one or many channels. It
 * goes out in a batch with the claims that arrive with it (batcher.ts).
 */
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import type { SettleResult } from "../../protocol/results.js";
import type { WaitUntil } from "../../protocol/schemas.js";
import { describeIssue } from "../../protocol/schemas.js";
import type { EvmContext } from "../context.js";
import { batcherOf } from "./batcher.js";
import { learnClaims } from "./claim-call.js";
import { claimSchema } from "./payload.js";

export async function settleClaim(
  ctx: EvmContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const parsed = claimSchema.safeParse(request.payload);
  if (!parsed.success) {
    const prefix = `${request.paths.payload}.payload`;
    return { ok: false, failure: invalidField(describeIssue(parsed.error, prefix), prefix) };
  }
  const { claims, claimAuthorizerSignature } = parsed.data;
  const sent = await batcherOf(ctx).claim(
    ctx,
    { rows: claims, signature: claimAuthorizerSignature, payment: request },
    waitUntil,
  );
  if (!sent.ok) return sent.result;
  learnClaims(ctx, claims);
  return { ok: true, payer: "", transactionHash: sent.hash };
}
