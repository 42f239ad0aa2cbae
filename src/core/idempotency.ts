/** `payment-identifier`: the same id and request answers the first success again while its
 * transaction is on chain; another request is `idempotency_conflict`. Failures are not kept. */
import { createHash } from "node:crypto";
import { type Failure, failed, failure } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { SettleResult } from "../protocol/results.js";
import { canonical } from "../protocol/words.js";
import type { SettlementStore } from "./store.js";

export const PAYMENT_IDENTIFIER = "payment-identifier";
const ID_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
export const PAYMENT_IDENTIFIER_SHAPE = "16 to 128 characters of A-Z, a-z, 0-9, _ and -";

export function isPaymentIdentifier(id: string): boolean {
  return ID_PATTERN.test(id);
}

/** The request's payment id; undefined when it carries none; a Failure when it is malformed. */
export function paymentIdentifier(request: PaymentRequest): string | undefined | Failure {
  const extension = request.extensions?.[PAYMENT_IDENTIFIER];
  if (extension === undefined || extension === null) return undefined;
  const info = (extension as { info?: { id?: unknown } }).info;
  const id = info?.id;
  if (id === undefined) return undefined;
  if (typeof id !== "string" || !ID_PATTERN.test(id)) {
    return failure(
      "invalid_request",
      `${request.paths.payload}.extensions["${PAYMENT_IDENTIFIER}"].info.id must be ${PAYMENT_IDENTIFIER_SHAPE}`,
    );
  }
  return id;
}

/** What makes two requests the same payment: everything but how long the caller waits. */
export function fingerprint(request: PaymentRequest): string {
  const { x402Version, payloadScheme, payloadNetwork, payload, requirements, extensions } = request;
  const same = { x402Version, payloadScheme, payloadNetwork, payload, requirements, extensions };
  return createHash("sha256").update(canonical(same)).digest("hex");
}

type Success = Extract<SettleResult, { ok: true }>;

function isSuccess(answer: unknown): answer is Success {
  const a = answer as Partial<Success> | null;
  return a?.ok === true && typeof a.payer === "string" && typeof a.transactionHash === "string";
}

/** Runs `settle` at most once per payment id (`stillOnChain`: a reorg may have dropped it). */
export async function settleOnce(
  store: SettlementStore,
  request: PaymentRequest,
  settle: () => Promise<SettleResult>,
  stillOnChain: (hash: string) => Promise<boolean>,
): Promise<SettleResult> {
  const id = paymentIdentifier(request);
  if (id === undefined) return settle();
  if (typeof id !== "string") return { ok: false, failure: id };
  const claim = await store.claimIdempotency(id, fingerprint(request));
  switch (claim.kind) {
    case "conflict":
      return failed(
        "idempotency_conflict",
        `payment-identifier ${id} was already used for a different payment request; use a new id for a new payment`,
      );
    case "running":
      return failed(
        "settlement_in_progress",
        `payment-identifier ${id} is being settled right now; retry in a moment`,
      );
    case "answered": {
      const answer = claim.answer;
      if (isSuccess(answer)) {
        const hash = answer.transactionHash;
        if (hash === "" || (await stillOnChain(hash).catch(() => true))) return answer;
      }
      // Gone from the chain: settle again, and let the pipeline decide.
      const again = await settle();
      if (again.ok)
        await Promise.resolve(store.finishIdempotency(id, again)).catch(() => undefined);
      return again;
    }
    case "run":
      break;
  }
  let result: SettleResult | undefined;
  try {
    result = await settle();
    return result;
  } finally {
    const answer = result?.ok ? result : undefined;
    await Promise.resolve(store.finishIdempotency(id, answer)).catch(() => undefined);
  }
}
