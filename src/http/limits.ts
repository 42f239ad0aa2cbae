/** Body bytes buffered across requests in flight, bounded (issue 9): past it, 503 `overloaded`. */
import type { IncomingMessage } from "node:http";
import { type Failure, failure } from "../protocol/errors.js";
import { errorResponse, type HttpResponse } from "./handler.js";

/** Request-body bytes buffered across requests in flight: 128 bodies of the 64 KiB maximum. */
export const DEFAULT_MAX_INFLIGHT_BYTES = 8 * 1024 * 1024;
/** The answer under load; 429 on /supported, the one status the official client retries there. */
export function overloaded(what: string, path?: string): Failure {
  return failure("overloaded", `${what}; retry in a moment`, {
    retryAfterSeconds: 1,
    ...(path === "/supported" ? { status: 429 } : {}),
  });
}

export class ByteBudget {
  #used = 0;
  constructor(readonly limit: number) {}

  take(bytes: number): boolean {
    if (this.#used + bytes > this.limit) return false;
    this.#used += bytes;
    return true;
  }

  give(bytes: number): void {
    this.#used -= bytes;
  }
}

/** A body, or the answer instead; then close the connection "drained", "now" (unread), or not. */
export type Body =
  | { readonly ok: true; readonly body: Buffer; readonly release: () => void }
  | { readonly ok: false; readonly response: HttpResponse; readonly close?: "drained" | "now" };

export interface BodyLimits {
  readonly limit: number;
  readonly budget: ByteBudget;
  /** Answer this instead of reading the body (the body is still drained first). */
  readonly refuse?: Failure | undefined;
}

/** Reads a request body within the body limit and the shared byte budget. */
export function readBody(request: IncomingMessage, limits: BodyLimits): Promise<Body> {
  const { limit, budget } = limits;
  const tooLarge = (): Body => ({
    ok: false,
    response: errorResponse(failure("payload_too_large", `the body is over ${limit} bytes`)),
    close: "now",
  });
  const declared = Number(request.headers["content-length"]);
  const hasLength = request.headers["content-length"] !== undefined && Number.isFinite(declared);
  if (hasLength && declared > limit) return Promise.resolve(tooLarge());

  return new Promise((resolve) => {
    let refusal = limits.refuse;
    const chunks: Buffer[] = [];
    let size = 0;
    // The declared length is taken up front: concurrent requests cannot all pass, then all buffer.
    let held = 0;
    if (!refusal && hasLength) {
      if (budget.take(declared)) held = declared;
      else refusal = overloaded("too many request bytes in flight");
    }
    let done = false;
    const giveBack = () => {
      budget.give(held);
      held = 0;
    };
    const finish = (result: Body) => {
      if (done) return;
      done = true;
      if (!result.ok) giveBack();
      resolve(result);
    };
    request.on("data", (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        // Stop reading at once; the socket is destroyed after the answer is written.
        const response = refusal ? errorResponse(refusal) : undefined;
        finish(response ? { ok: false, response, close: "now" } : tooLarge());
        return;
      }
      if (refusal) return; // draining: read and thrown away
      if (!hasLength) {
        if (budget.take(chunk.length)) held += chunk.length;
        else {
          // Stop buffering: drop what this request holds and drain the rest.
          refusal = overloaded("too many request bytes in flight");
          chunks.length = 0;
          giveBack();
          return;
        }
      }
      chunks.push(chunk);
    });
    request.on("end", () => {
      if (refusal) {
        const turnedAway = refusal === limits.refuse;
        finish({
          ok: false,
          response: errorResponse(refusal),
          ...(turnedAway ? { close: "drained" as const } : {}),
        });
        return;
      }
      // Given back once: a second call gives back nothing.
      finish({ ok: true, body: Buffer.concat(chunks), release: giveBack });
    });
    const cutOff = () =>
      finish({
        ok: false,
        response: errorResponse(failure("invalid_request", "the body was cut off")),
      });
    request.on("error", cutOff);
    request.on("aborted", cutOff);
  });
}
