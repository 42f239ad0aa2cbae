/** POST /accepts (Faremeter): the offers we can settle, completed for a buyer, as a v2 402 body. */
import { type Answer, failed } from "../protocol/errors.js";
import { isObject } from "../protocol/words.js";
import type { ChainFamily } from "./family.js";

const DEFAULT_MAX_TIMEOUT_SECONDS = 300;
const MAX_OFFERS = 64;

/** The offer's own positive whole `maxTimeoutSeconds`, else the default. */
export function timeoutOf(offer: Readonly<Record<string, unknown>>, fallback: number): number {
  const timeout = offer.maxTimeoutSeconds;
  return typeof timeout === "number" && Number.isInteger(timeout) && timeout > 0
    ? timeout
    : fallback;
}

async function complete(families: readonly ChainFamily[], offered: unknown) {
  if (!isObject(offered) || typeof offered.network !== "string") return undefined;
  const offer = { ...offered, network: offered.network };
  const family = families.find((f) => f.claims(offer.network));
  return family?.complete(offer, DEFAULT_MAX_TIMEOUT_SECONDS);
}

export async function answerAccepts(
  families: readonly ChainFamily[],
  body: unknown,
): Promise<Answer> {
  if (!isObject(body) || !Array.isArray(body.accepts)) {
    return failed("invalid_request", "accepts must be an array of PaymentRequirements");
  }
  if (body.accepts.length > MAX_OFFERS) {
    return failed("invalid_request", `accepts holds more than ${MAX_OFFERS} entries`);
  }
  const completed = await Promise.all(body.accepts.map((offer) => complete(families, offer)));
  const resource =
    isObject(body.resource) && typeof body.resource.url === "string" ? body.resource : { url: "" };
  return {
    ok: true,
    body: {
      x402Version: 2,
      resource,
      accepts: completed.filter((a): a is Record<string, unknown> => a !== undefined),
    },
  };
}
