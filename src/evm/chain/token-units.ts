/** A token's decimals and symbol for a refusal's words: the network table's, else read once and kept. */

import { type Address, type PublicClient, parseAbi } from "viem";
import { setNewest } from "../../core/newest.js";
import { plainSymbol, type TokenUnits } from "../../protocol/amounts.js";
import { knownToken } from "../../protocol/networks.js";
import { isUnreachable } from "../../rpc/rpc.js";

const MAX_KEPT = 256;
/** More decimals than this is no token meant for people: its units are said as they are. */
const MAX_DECIMALS = 36;

const tokenAbi = parseAbi([
  "function decimals() view returns (uint8)",
  "function symbol() view returns (string)",
]);

/** By chain and token; null: the token answers no decimals(). */
const kept = new Map<string, TokenUnits | null>();
const reading = new Map<string, Promise<TokenUnits | undefined>>();

const keyOf = (chainId: number, asset: string) => `${chainId}:${asset.toLowerCase()}`;

/** What is known or kept of the token, without reading anything. */
export function keptTokenUnits(chainId: number, asset: string): TokenUnits | undefined {
  return knownToken(chainId, asset) ?? kept.get(keyOf(chainId, asset)) ?? undefined;
}

/** The token's decimals and symbol, read once and kept; undefined when it has no decimals(). */
export function tokenUnits(
  client: PublicClient,
  chainId: number,
  asset: Address,
): Promise<TokenUnits | undefined> {
  const known = keptTokenUnits(chainId, asset);
  const key = keyOf(chainId, asset);
  if (known || kept.has(key)) return Promise.resolve(known);
  let read = reading.get(key);
  if (!read) {
    read = readUnits(client, key, asset).finally(() => reading.delete(key));
    reading.set(key, read);
  }
  return read;
}

async function readUnits(
  client: PublicClient,
  key: string,
  asset: Address,
): Promise<TokenUnits | undefined> {
  const [decimals, symbol] = await Promise.allSettled([
    client.readContract({ address: asset, abi: tokenAbi, functionName: "decimals" }),
    client.readContract({ address: asset, abi: tokenAbi, functionName: "symbol" }),
  ]);
  if (decimals.status === "rejected" && isUnreachable(decimals.reason)) return undefined;
  const units =
    decimals.status === "fulfilled" && decimals.value <= MAX_DECIMALS
      ? {
          decimals: decimals.value,
          symbol: symbol.status === "fulfilled" ? plainSymbol(symbol.value) : undefined,
        }
      : null;
  setNewest(kept, key, units, MAX_KEPT);
  return units ?? undefined;
}
