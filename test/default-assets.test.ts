/**
 * Our network table (src/protocol/networks.ts) beside the official @x402/evm's: every chain of its
 * default-asset table (`DEFAULT_ASSETS`) is in ours, with the same tokens in the same order (address,
 * EIP-712 name and version, decimals, symbol, Permit2-only), and every x402 v1 network name
 * (`EVM_NETWORK_CHAIN_ID_MAP`) names the same chain in ours. A release that adds a chain or a token
 * fails here until it is added to our table; where ours deliberately differs, the difference is
 * listed below with its reason.
 *
 * Issue 26, item 5: 2.27's table knew 11 chain ids ours did not (Mezo 31611/31612, Radius
 * 72344/723487, ADI 36900, HPP 181228/190415, XDC 50/51, Igra 38833, Celo Sepolia 11142220), and
 * 8 tokens of chains ours knew (MegaETH's MegaUSD, Stable's and Flare's USDT0, Celo's USDT and
 * USAT).
 */
import { DEFAULT_ASSETS } from "@x402/evm";
import { EVM_NETWORK_CHAIN_ID_MAP } from "@x402/evm/v1";
import { describe, expect, test } from "vitest";
import {
  caip2,
  chainIdOfCaip2,
  chainIdOfV1Name,
  KNOWN_NETWORKS,
  type KnownAsset,
  knownNetwork,
  knownToken,
} from "../src/protocol/networks.js";

/** Tokens ours knows that the official 2.27 table does not, by CAIP-2 id, and why. */
const OURS_ONLY: Readonly<Record<string, string>> = {
  "eip155:43113": "Avalanche Fuji's USDC: in the legacy x402 v1 package's config, not in 2.x's",
  "eip155:80002": "Polygon Amoy's USDC: in the legacy x402 v1 package's config, not in 2.x's",
  "eip155:4689":
    "IoTeX's bridged USDC: in the legacy x402 v1 package's config, not in 2.x's; no symbol (a bridged token's ticker is the bridge's to choose)",
};

/** What both tables say of a token, in one shape. */
function fromOurs(asset: KnownAsset) {
  return {
    address: asset.address.toLowerCase(),
    name: asset.name,
    version: asset.version,
    decimals: asset.decimals,
    symbol: asset.symbol,
    permit2: asset.transfer === "permit2",
  };
}

function fromOfficial(asset: (typeof DEFAULT_ASSETS)[string][number]) {
  return {
    address: asset.asset.toLowerCase(),
    name: asset.name,
    version: asset.version,
    decimals: asset.decimals,
    symbol: asset.symbol,
    permit2: asset.assetTransferMethod === "permit2",
  };
}

describe("the official default-asset table (@x402/evm DEFAULT_ASSETS)", () => {
  test.each(Object.entries(DEFAULT_ASSETS))(
    "%s: in ours, with the same tokens in the same order",
    (network, assets) => {
      const chainId = chainIdOfCaip2(network);
      expect(chainId, `${network} is not an eip155 CAIP-2 id`).toBeDefined();
      const known = knownNetwork(chainId as number);
      expect(known, `${network} is not in src/protocol/networks.ts`).toBeDefined();
      expect((known?.assets ?? []).map(fromOurs)).toEqual(assets.map(fromOfficial));
      // Each is known for messages too, by any case of its address.
      for (const { asset, decimals } of assets) {
        expect(knownToken(chainId as number, asset.toUpperCase().replace("0X", "0x"))).toEqual(
          expect.objectContaining({ decimals }),
        );
      }
    },
  );

  test("our tokens on chains it does not list are the listed exceptions", () => {
    const oursOnly = KNOWN_NETWORKS.filter(
      (n) => (n.assets ?? []).length > 0 && !Object.hasOwn(DEFAULT_ASSETS, caip2(n.chainId)),
    ).map((n) => caip2(n.chainId));
    expect(oursOnly.sort()).toEqual(Object.keys(OURS_ONLY).sort());
  });

  test("the official v1 network names name the same chains in ours, and ours names no other", () => {
    for (const [name, chainId] of Object.entries(EVM_NETWORK_CHAIN_ID_MAP)) {
      expect(chainIdOfV1Name(name), name).toBe(chainId);
    }
    const ours = KNOWN_NETWORKS.flatMap((n) => (n.v1Name ? [n.v1Name] : []));
    expect(ours.sort()).toEqual(Object.keys(EVM_NETWORK_CHAIN_ID_MAP).sort());
  });

  test("no chain id is in our table twice", () => {
    const ids = KNOWN_NETWORKS.map((n) => n.chainId);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
