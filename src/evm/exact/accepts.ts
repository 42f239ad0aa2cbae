/** POST /accepts for EVM `exact`: the token's EIP-712 name and version into `extra` (read if
 * missing; not for Permit2, which signs its own domain). */
import { type Address, getAddress, getContract, isAddress } from "viem";
import { isObject } from "../../protocol/words.js";
import type { EvmSchemeHost } from "../scheme.js";
import { eip3009Abi as tokenAbi } from "./eip3009-encoding.js";

/** Token EIP-712 domains by chain and address: a token's name and version do not change. */
const domains = new Map<string, Promise<{ name: string; version: string } | undefined>>();

function domainOf(host: EvmSchemeHost, chainId: number, asset: Address) {
  const key = `${chainId}:${asset}`;
  let domain = domains.get(key);
  if (!domain) {
    domain = host.context(chainId).then(async ({ client }) => {
      const { read } = getContract({ address: asset, abi: tokenAbi, client });
      const [name, version] = await Promise.all([read.name(), read.version()]);
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

/** One offered `exact` requirement, completed, or undefined when it cannot be settled here. */
export async function completeExact(
  offer: Readonly<Record<string, unknown>>,
  chainId: number,
  host: EvmSchemeHost,
): Promise<Record<string, unknown> | undefined> {
  const { asset, payTo, amount } = offer;
  if (typeof asset !== "string" || !isAddress(asset, { strict: false })) return undefined;
  if (typeof payTo !== "string" || !isAddress(payTo, { strict: false })) return undefined;
  if (typeof amount !== "string" || !/^\d+$/.test(amount)) return undefined;
  const extra: Record<string, unknown> = isObject(offer.extra) ? { ...offer.extra } : {};
  const permit2 = extra.assetTransferMethod === "permit2";
  if (typeof extra.name !== "string" || typeof extra.version !== "string") {
    const domain = await domainOf(host, chainId, getAddress(asset));
    if (domain) Object.assign(extra, domain);
    else if (!permit2) return undefined;
  }
  return { ...offer, extra };
}
