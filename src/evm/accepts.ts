/**
 * POST /accepts, the facilitator call of Faremeter's middleware (`@faremeter/middleware`): a
 * resource server sends the payment requirements it would offer, `{x402Version: 2, resource,
 * accepts: [...]}`, and the facilitator answers with the ones it can settle, completed with what a
 * buyer needs to sign: the token's EIP-712 name and version in `extra` (read from the token when
 * missing) and a `maxTimeoutSeconds`; on Solana, our fee payer in `extra.feePayer`
 * (src/svm/accepts.ts). The answer has the shape of an x402 v2 402 body.
 */
import { type Address, getAddress, isAddress, parseAbi } from "viem";
import type { Facilitator } from "../core/facilitator.js";
import { type Failure, failure } from "../protocol/errors.js";
import { caip2, chainIdOfCaip2, chainIdOfV1Name } from "../protocol/networks.js";
import { looksSolana } from "../protocol/solana-networks.js";
import { completeSvm, type SvmAcceptsContext } from "../svm/accepts.js";

const tokenAbi = parseAbi([
  "function name() view returns (string)",
  "function version() view returns (string)",
]);

const DEFAULT_MAX_TIMEOUT_SECONDS = 300;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export type AcceptsAnswer =
  | { readonly ok: true; readonly body: Record<string, unknown> }
  | { readonly ok: false; readonly failure: Failure };

/** Token EIP-712 domains by chain and address: a token's name and version do not change. */
const domains = new Map<string, Promise<{ name: string; version: string } | undefined>>();

function domainOf(facilitator: Facilitator, chainId: number, asset: Address) {
  const key = `${chainId}:${asset}`;
  let domain = domains.get(key);
  if (!domain) {
    domain = facilitator.rpc.client(chainId).then(async (client) => {
      const [name, version] = await Promise.all([
        client.readContract({ address: asset, abi: tokenAbi, functionName: "name" }),
        client.readContract({ address: asset, abi: tokenAbi, functionName: "version" }),
      ]);
      return { name, version };
    });
    // A failure (no such token, chain down) is not remembered: the next ask tries again.
    domain = domain.catch(() => {
      domains.delete(key);
      return undefined;
    });
    domains.set(key, domain);
  }
  return domain;
}

/** One offered requirement, completed, or undefined when this facilitator cannot settle it. */
async function complete(
  facilitator: Facilitator,
  served: ReadonlySet<number>,
  svm: SvmAcceptsContext,
  offered: unknown,
): Promise<Record<string, unknown> | undefined> {
  if (!isObject(offered) || offered.scheme !== "exact" || typeof offered.network !== "string") {
    return undefined;
  }
  if (looksSolana(offered.network)) {
    return completeSvm(svm, { ...offered, network: offered.network }, DEFAULT_MAX_TIMEOUT_SECONDS);
  }
  const chainId = chainIdOfCaip2(offered.network) ?? chainIdOfV1Name(offered.network);
  if (chainId === undefined || !served.has(chainId)) return undefined;
  const { asset, payTo, amount } = offered;
  if (typeof asset !== "string" || !isAddress(asset, { strict: false })) return undefined;
  if (typeof payTo !== "string" || !isAddress(payTo, { strict: false })) return undefined;
  if (typeof amount !== "string" || !/^\d+$/.test(amount)) return undefined;
  const extra: Record<string, unknown> = isObject(offered.extra) ? { ...offered.extra } : {};
  const permit2 = extra.assetTransferMethod === "permit2";
  if (typeof extra.name !== "string" || typeof extra.version !== "string") {
    const domain = await domainOf(facilitator, chainId, getAddress(asset));
    // EIP-3009 cannot be signed without the domain; Permit2 signs for Permit2's own.
    if (domain) Object.assign(extra, domain);
    else if (!permit2) return undefined;
  }
  const timeout = offered.maxTimeoutSeconds;
  return {
    ...offered,
    network: caip2(chainId),
    maxTimeoutSeconds:
      typeof timeout === "number" && Number.isInteger(timeout) && timeout > 0
        ? timeout
        : DEFAULT_MAX_TIMEOUT_SECONDS,
    extra,
  };
}

/** Offers naming no fee payer get ours in turn, as /supported names them. */
let feePayerTurn = 0;

export async function answerAccepts(
  facilitator: Facilitator,
  body: unknown,
): Promise<AcceptsAnswer> {
  if (!isObject(body) || !Array.isArray(body.accepts)) {
    return {
      ok: false,
      failure: failure("invalid_request", "accepts must be an array of PaymentRequirements"),
    };
  }
  if (body.accepts.length > 64) {
    return { ok: false, failure: failure("invalid_request", "accepts holds more than 64 entries") };
  }
  const [chainIds, clusters] = await Promise.all([
    facilitator.rpc.servedChainIds(),
    facilitator.rpc.servedSolanaNetworks(),
  ]);
  const served = new Set(chainIds);
  const feePayers = facilitator.svmFeePayers;
  const svm: SvmAcceptsContext = {
    served: new Set(clusters),
    feePayers,
    nextFeePayer: () => feePayers[feePayerTurn++ % feePayers.length] as string,
  };
  const completed = await Promise.all(
    body.accepts.map((a) => complete(facilitator, served, svm, a)),
  );
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
