/**
 * The facilitator the chain-backed tests settle with (the devnet's RPC and settlement key), and
 * requests to its HTTP handler in-process.
 */
import { privateKeyToAccount } from "viem/accounts";
import type { Devnet } from "../../src/evm/devnet/index.js";
import { Facilitator, type FacilitatorOptions } from "../../src/facilitator.js";
import { createHandler } from "../../src/http/handler.js";

export function facilitatorOn(devnet: Devnet, options: Partial<FacilitatorOptions> = {}) {
  return new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiptPollMs: 50,
    ...options,
  });
}

/** POSTs `body` as JSON to `route` of the HTTP handler over `facilitator`, in-process. */
export async function handlePost(facilitator: Facilitator, route: string, body: unknown) {
  const answer = await createHandler(facilitator)({
    method: "POST",
    url: route,
    headers: { "content-type": "application/json" },
    body: Buffer.from(JSON.stringify(body)),
  });
  return { status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> };
}

/**
 * POSTs `body` as JSON to `route` of a running server (with `apiKey` as its bearer, if given),
 * with the status and `Retry-After`.
 */
export async function postJson(
  server: { readonly url: string },
  route: string,
  body: unknown,
  apiKey?: string,
) {
  const response = await fetch(`${server.url}${route}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
    },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    // biome-ignore lint/suspicious/noExplicitAny: answers are plain JSON the tests pick apart.
    body: (await response.json()) as Record<string, any>,
  };
}
