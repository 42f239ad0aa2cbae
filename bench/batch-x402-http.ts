/**
 * One way to ask either facilitator (ours or the official one) to verify or settle over HTTP, in
 * the x402 dialect: the request body, and what counts as an answer that succeeded.
 */
import type { Hex } from "viem";
import type { Target } from "./batch-server-processes.js";
import { post } from "./lib.js";

export const REQUEST_TIMEOUT_MS = 60_000;

// biome-ignore lint/suspicious/noExplicitAny: wire objects are plain JSON here.
export type Json = any;

export interface Outcome {
  readonly ok: boolean;
  readonly ms: number;
  readonly hash?: Hex | undefined;
  readonly body?: Json;
  readonly error?: string | undefined;
}

/** POST /verify: ok when 200 and isValid. */
export async function verifyAt(target: Target, body: string): Promise<Outcome> {
  const answer = await post(`${target.url}/verify`, body, REQUEST_TIMEOUT_MS);
  const parsed = answer.body as Json;
  if (answer.status === 200 && parsed?.isValid === true) {
    return { ok: true, ms: answer.ms, body: parsed };
  }
  return { ok: false, ms: answer.ms, body: parsed, error: describe(answer) };
}

/** POST /settle: ok when 200, success and a transaction hash. */
export async function settleAt(target: Target, body: string): Promise<Outcome> {
  const answer = await post(`${target.url}/settle`, body, REQUEST_TIMEOUT_MS);
  const parsed = answer.body as Json;
  const hash = parsed?.transaction;
  if (answer.status === 200 && parsed?.success === true && typeof hash === "string" && hash) {
    return { ok: true, ms: answer.ms, hash: hash as Hex, body: parsed };
  }
  return { ok: false, ms: answer.ms, body: parsed, error: describe(answer) };
}

function describe(answer: { status: number; error?: string; text?: string }): string {
  if (answer.status === 0) return answer.error ?? "no answer";
  return `${answer.status} ${(answer.text ?? "").trim().slice(0, 300)}`;
}

/** The x402-dialect body: the payment, the requirements, and (ignored by verify) waitUntil. */
export const x402Body = (payment: Json, requirements: Json) =>
  JSON.stringify({
    x402Version: 2,
    paymentPayload: payment,
    paymentRequirements: requirements,
    waitUntil: "confirmed",
  });
