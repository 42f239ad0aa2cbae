/**
 * Networks as data: chain ids, v1 names, public RPCs and stablecoins (any other chain works with
 * a configured RPC). Assets: @x402/evm 2.27.0's DEFAULT_ASSETS in its order, plus three legacy v1
 * USDCs; test/default-assets.test.ts keeps the two tables in step.
 */
import type { Address } from "viem";
import type { TokenUnits } from "./amounts.js";

export interface KnownAsset {
  readonly address: Address;
  /** EIP-712 domain name and version, as requirements.extra must carry them. */
  readonly name: string;
  readonly version: string;
  readonly decimals: number;
  /** Its ticker, for messages ("0.01 USDC"); left out where it is not certain. */
  readonly symbol?: string | undefined;
  /** "permit2" for a token without EIP-3009, which official clients pay through Permit2. */
  readonly transfer?: "permit2";
}

export interface KnownNetwork {
  readonly chainId: number;
  /** The x402 v1 network name, where v1 has one. */
  readonly v1Name?: string;
  readonly label: string;
  readonly defaultRpcUrl?: string;
  /** The chain's stablecoins, its default first (the chain's USDC where it has one). */
  readonly assets?: readonly KnownAsset[];
  /** The native token's symbol, for messages. */
  readonly native?: string;
  /**
   * Default cap on one settlement's cost in the native token, above busy-hour prices: a fee spike
   * stops settles before it drains the key (docs/settling-safely.md).
   */
  readonly feeCap?: string;
  /** The default gas bounds are multiplied by this where gas also pays for L1 data (rollups). */
  readonly gasScale?: number;
}

/** The fee cap of a chain without its own: 0.01 of its native token. */
export const DEFAULT_SETTLE_FEE_CAP = "0.01";

const usd = (address: Address, name = "USD Coin", version = "2"): KnownAsset => ({
  address,
  name,
  version,
  decimals: 6,
  symbol: "USDC",
});

/** A token of the official table other than a 6-decimal USDC on EIP-3009. */
const token = (
  address: Address,
  name: string,
  version: string,
  decimals: number,
  symbol: string,
  transfer?: "permit2",
): KnownAsset => ({ address, name, version, decimals, symbol, ...(transfer ? { transfer } : {}) });

const mezoUsd = (address: Address) => token(address, "Mezo USD", "1", 18, "mUSD", "permit2");
const radiusSbc = token(
  "0x33ad9e4BD16B69B5BFdED37D8B5D9fF9aba014Fb",
  "Stable Coin",
  "1",
  6,
  "SBC",
  "permit2",
);
const hppUsdc = token(
  "0x401eCb1D350407f13ba348573E5630B83638E30D",
  "Bridged USDC",
  "2",
  6,
  "USDC.e",
);
/** Mezo pays gas in BTC, where 0.01 would be worth far more than elsewhere: about Base's cap. */
const MEZO_FEE_CAP = "0.0001";

export const KNOWN_NETWORKS: readonly KnownNetwork[] = [
  {
    chainId: 1,
    v1Name: "ethereum",
    label: "Ethereum",
    defaultRpcUrl: "https://ethereum.reth.rs/rpc",
    assets: [usd("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48")],
    native: "ETH",
    feeCap: "0.02",
  },
  {
    chainId: 11155111,
    v1Name: "sepolia",
    label: "Sepolia",
    defaultRpcUrl: "https://11155111.rpc.thirdweb.com",
    native: "ETH",
    feeCap: "0.02",
  },
  {
    chainId: 8453,
    v1Name: "base",
    label: "Base",
    defaultRpcUrl: "https://mainnet.base.org",
    assets: [usd("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913")],
    native: "ETH",
    feeCap: "0.003",
  },
  {
    chainId: 84532,
    v1Name: "base-sepolia",
    label: "Base Sepolia",
    defaultRpcUrl: "https://sepolia.base.org",
    assets: [usd("0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC")],
    native: "ETH",
    feeCap: "0.003",
  },
  {
    chainId: 43114,
    v1Name: "avalanche",
    label: "Avalanche",
    defaultRpcUrl: "https://api.avax.network/ext/bc/C/rpc",
    assets: [usd("0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E")],
    native: "AVAX",
    feeCap: "0.1",
  },
  {
    chainId: 43113,
    v1Name: "avalanche-fuji",
    label: "Avalanche Fuji",
    defaultRpcUrl: "https://api.avax-test.network/ext/bc/C/rpc",
    assets: [usd("0x5425890298aed601595a70AB815c96711a31Bc65")],
    native: "AVAX",
    feeCap: "0.1",
  },
  {
    chainId: 137,
    v1Name: "polygon",
    label: "Polygon",
    defaultRpcUrl: "https://polygon.drpc.org",
    assets: [usd("0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359")],
    native: "POL",
    feeCap: "2",
  },
  {
    chainId: 80002,
    v1Name: "polygon-amoy",
    label: "Polygon Amoy",
    defaultRpcUrl: "https://polygon-amoy.drpc.org",
    assets: [usd("0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582", "USDC")],
    native: "POL",
    feeCap: "2",
  },
  {
    chainId: 42161,
    label: "Arbitrum One",
    defaultRpcUrl: "https://arb1.arbitrum.io/rpc",
    assets: [usd("0xaf88d065e77c8cC2239327C5EDb3A432268e5831")],
    native: "ETH",
    feeCap: "0.003",
    gasScale: 4,
  },
  {
    chainId: 421614,
    label: "Arbitrum Sepolia",
    defaultRpcUrl: "https://sepolia-rollup.arbitrum.io/rpc",
    assets: [usd("0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d")],
    native: "ETH",
    feeCap: "0.003",
    gasScale: 4,
  },
  {
    chainId: 2741,
    v1Name: "abstract",
    label: "Abstract",
    defaultRpcUrl: "https://api.mainnet.abs.xyz",
    native: "ETH",
    feeCap: "0.003",
    gasScale: 10,
  },
  {
    chainId: 11124,
    v1Name: "abstract-testnet",
    label: "Abstract Testnet",
    defaultRpcUrl: "https://api.testnet.abs.xyz",
    native: "ETH",
    feeCap: "0.003",
    gasScale: 10,
  },
  {
    chainId: 4689,
    v1Name: "iotex",
    label: "IoTeX",
    defaultRpcUrl: "https://babel-api.mainnet.iotex.io",
    // A bridged token's ticker is the bridge's to choose: amounts here say no symbol.
    assets: [
      { ...usd("0xcdf79194c6c285077a58da47641d4dbe51f63542", "Bridged USDC"), symbol: undefined },
    ],
    native: "IOTX",
    feeCap: "2",
  },
  {
    chainId: 1329,
    v1Name: "sei",
    label: "Sei",
    defaultRpcUrl: "https://evm-rpc.sei-apis.com",
    assets: [usd("0xe15fC38F6D8c56aF07bbCBe3BAf5708A2Bf42392", "USDC")],
    native: "SEI",
    feeCap: "1",
  },
  {
    chainId: 1328,
    v1Name: "sei-testnet",
    label: "Sei Testnet",
    defaultRpcUrl: "https://evm-rpc-testnet.sei-apis.com",
    assets: [usd("0x4fCF1784B31630811181f670Aea7A7bEF803eaED", "USDC")],
    native: "SEI",
    feeCap: "1",
  },
  { chainId: 3338, v1Name: "peaq", label: "peaq", native: "PEAQ" },
  {
    chainId: 1514,
    v1Name: "story",
    label: "Story",
    defaultRpcUrl: "https://mainnet.datarpc.io",
    native: "IP",
  },
  {
    chainId: 41923,
    v1Name: "educhain",
    label: "EDU Chain",
    defaultRpcUrl: "https://rpc.educhain.xyz",
    native: "EDU",
    gasScale: 4,
  },
  {
    chainId: 324705682,
    v1Name: "skale-base-sepolia",
    label: "SKALE Base Sepolia",
    native: "sFUEL",
  },
  {
    chainId: 4326,
    v1Name: "megaeth",
    label: "MegaETH",
    defaultRpcUrl: "https://mainnet.megaeth.com/rpc",
    assets: [
      token("0xFAfDdbb3FC7688494971a79cc65DCa3EF82079E7", "MegaUSD", "1", 18, "MegaUSD", "permit2"),
    ],
    native: "ETH",
    feeCap: "0.003",
  },
  {
    chainId: 143,
    v1Name: "monad",
    label: "Monad",
    defaultRpcUrl: "https://rpc.monad.xyz",
    assets: [usd("0x754704Bc059F8C67012fEd69BC8A327a5aafb603", "USDC")],
    native: "MON",
    feeCap: "1",
  },
  {
    chainId: 988,
    v1Name: "stable",
    label: "Stable",
    defaultRpcUrl: "https://rpc.stable.xyz",
    assets: [token("0x779Ded0c9e1022225f8E0630b35a9b54bE713736", "USDT0", "1", 6, "USDT0")],
    native: "USDT0",
  },
  {
    chainId: 2201,
    v1Name: "stable-testnet",
    label: "Stable Testnet",
    defaultRpcUrl: "https://rpc.testnet.stable.xyz",
    assets: [token("0x78Cf24370174180738C5B8E352B6D14c83a6c9A9", "USDT0", "1", 6, "USDT0")],
    native: "USDT0",
  },
  {
    chainId: 42220,
    v1Name: "celo",
    label: "Celo",
    defaultRpcUrl: "https://forno.celo.org",
    assets: [
      usd("0xcebA9300f2b948710d2653dD7B07f33A8B32118C", "USDC"),
      token("0x48065fbBE25f71C9282ddf5e1cD6D6A887483D5e", "Tether USD", "1", 6, "USDT"),
      token("0xD2ab3C9A02DBBAB236BfEC45D1d755DF4267F771", "Tether America USD", "1", 6, "USAT"),
    ],
    native: "CELO",
    feeCap: "0.2",
  },
  {
    chainId: 14,
    v1Name: "flare",
    label: "Flare",
    defaultRpcUrl: "https://flare-api.flare.network/ext/C/rpc",
    // "USD₮0": the token's EIP-712 name spells the tugrik sign (U+20AE), as the official table.
    assets: [token("0xe7cd86e13AC4309349F30B3435a9d337750fC82D", "USD₮0", "1", 6, "USDT0")],
    native: "FLR",
    feeCap: "2",
  },
  // Added by 2.27's table: no built-in public RPC, no v1 name; labels as viem's chains.
  {
    chainId: 11142220,
    label: "Celo Sepolia",
    assets: [usd("0x01C5C0122039549AD1493B8220cABEdD739BC44E", "USDC")],
    native: "CELO",
    feeCap: "0.2",
  },
  {
    chainId: 31612,
    label: "Mezo",
    assets: [mezoUsd("0xdD468A1DDc392dcdbEf6db6e34E89AA338F9F186")],
    native: "BTC",
    feeCap: MEZO_FEE_CAP,
  },
  {
    chainId: 31611,
    label: "Mezo Testnet",
    assets: [mezoUsd("0x118917a40FAF1CD7a13dB0Ef56C86De7973Ac503")],
    native: "BTC",
    feeCap: MEZO_FEE_CAP,
  },
  { chainId: 723487, label: "Radius", assets: [radiusSbc], native: "RUSD" },
  { chainId: 72344, label: "Radius Testnet", assets: [radiusSbc], native: "RUSD" },
  {
    chainId: 36900,
    label: "ADI Chain",
    assets: [token("0x9cb8142aEBBcdc60AF7c97Af897A67A8f3CA71C2", "USDC.e", "2", 6, "USDC.e")],
    native: "ADI",
  },
  { chainId: 190415, label: "HPP", assets: [hppUsdc], native: "ETH" },
  { chainId: 181228, label: "HPP Sepolia", assets: [hppUsdc], native: "ETH" },
  {
    chainId: 50,
    label: "XDC",
    assets: [usd("0xfA2958CB79b0491CC627c1557F441eF849Ca8eb1", "USDC")],
    native: "XDC",
  },
  {
    chainId: 51,
    label: "XDC Apothem",
    assets: [usd("0xb5AB69F7bBada22B28e79C8FFAECe55eF1c771D4", "USDC")],
    native: "TXDC",
  },
  {
    chainId: 38833,
    label: "Igra",
    assets: [
      token("0xA5b8BF902b2844dA17d4506cc827F7F1681735E7", "USDC", "1", 6, "USDC", "permit2"),
    ],
    native: "iKAS",
  },
];

const byChainId = new Map(KNOWN_NETWORKS.map((n) => [n.chainId, n]));
const byV1Name = new Map(KNOWN_NETWORKS.flatMap((n) => (n.v1Name ? [[n.v1Name, n]] : [])));

export function knownNetwork(chainId: number): KnownNetwork | undefined {
  return byChainId.get(chainId);
}

/** A token of the chain's stablecoins in this table, by address (any case). */
export function knownAsset(chainId: number, asset: string): KnownAsset | undefined {
  const lower = asset.toLowerCase();
  return byChainId.get(chainId)?.assets?.find((a) => a.address.toLowerCase() === lower);
}

/** The decimals and symbol of a token this table knows (a chain's stablecoins), for messages. */
export function knownToken(chainId: number, asset: string): TokenUnits | undefined {
  const known = knownAsset(chainId, asset);
  return known ? { decimals: known.decimals, symbol: known.symbol } : undefined;
}

/** The chain id of an x402 v1 network name, if v1 knows the name. */
export function chainIdOfV1Name(name: string): number | undefined {
  return byV1Name.get(name)?.chainId;
}

export { type Caip2, caip2, chainIdOfCaip2 } from "./caip2.js";
