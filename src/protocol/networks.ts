/** Networks as data: @x402/evm 2.27.0's table and three legacy v1 USDCs (default-assets.test). */
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
  /** Default cap on a settlement's cost in native token, above busy hours: spikes can't drain. */
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

/** A row: chain id, label, native token's symbol, v1 name and public RPC (where any), the rest. */
const chain = (
  chainId: number,
  label: string,
  native: string,
  v1Name?: string,
  defaultRpcUrl?: string,
  rest: Omit<KnownNetwork, "chainId" | "label" | "native" | "v1Name" | "defaultRpcUrl"> = {},
): KnownNetwork => ({
  chainId,
  label,
  native,
  ...(v1Name && { v1Name }),
  ...(defaultRpcUrl && { defaultRpcUrl }),
  ...rest,
});
/** A chain 2.27's table added: no v1 name, no built-in public RPC. */
const newer = (
  chainId: number,
  label: string,
  native: string,
  rest?: Parameters<typeof chain>[5],
) => chain(chainId, label, native, undefined, undefined, rest);

export const KNOWN_NETWORKS: readonly KnownNetwork[] = [
  chain(1, "Ethereum", "ETH", "ethereum", "https://ethereum.reth.rs/rpc", {
    assets: [usd("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48")],
    feeCap: "0.02",
  }),
  chain(11155111, "Sepolia", "ETH", "sepolia", "https://11155111.rpc.thirdweb.com", {
    feeCap: "0.02",
  }),
  chain(8453, "Base", "ETH", "base", "https://mainnet.base.org", {
    assets: [usd("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913")],
    feeCap: "0.003",
  }),
  chain(84532, "Base Sepolia", "ETH", "base-sepolia", "https://sepolia.base.org", {
    assets: [usd("0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC")],
    feeCap: "0.003",
  }),
  chain(43114, "Avalanche", "AVAX", "avalanche", "https://api.avax.network/ext/bc/C/rpc", {
    assets: [usd("0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E")],
    feeCap: "0.1",
  }),
  chain(
    43113,
    "Avalanche Fuji",
    "AVAX",
    "avalanche-fuji",
    "https://api.avax-test.network/ext/bc/C/rpc",
    { assets: [usd("0x5425890298aed601595a70AB815c96711a31Bc65")], feeCap: "0.1" },
  ),
  chain(137, "Polygon", "POL", "polygon", "https://polygon.drpc.org", {
    assets: [usd("0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359")],
    feeCap: "2",
  }),
  chain(80002, "Polygon Amoy", "POL", "polygon-amoy", "https://polygon-amoy.drpc.org", {
    assets: [usd("0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582", "USDC")],
    feeCap: "2",
  }),
  chain(42161, "Arbitrum One", "ETH", undefined, "https://arb1.arbitrum.io/rpc", {
    assets: [usd("0xaf88d065e77c8cC2239327C5EDb3A432268e5831")],
    feeCap: "0.003",
    gasScale: 4,
  }),
  chain(421614, "Arbitrum Sepolia", "ETH", undefined, "https://sepolia-rollup.arbitrum.io/rpc", {
    assets: [usd("0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d")],
    feeCap: "0.003",
    gasScale: 4,
  }),
  chain(2741, "Abstract", "ETH", "abstract", "https://api.mainnet.abs.xyz", {
    feeCap: "0.003",
    gasScale: 10,
  }),
  chain(11124, "Abstract Testnet", "ETH", "abstract-testnet", "https://api.testnet.abs.xyz", {
    feeCap: "0.003",
    gasScale: 10,
  }),
  chain(4689, "IoTeX", "IOTX", "iotex", "https://babel-api.mainnet.iotex.io", {
    // A bridged token's ticker is the bridge's to choose: amounts here say no symbol.
    assets: [
      { ...usd("0xcdf79194c6c285077a58da47641d4dbe51f63542", "Bridged USDC"), symbol: undefined },
    ],
    feeCap: "2",
  }),
  chain(1329, "Sei", "SEI", "sei", "https://evm-rpc.sei-apis.com", {
    assets: [usd("0xe15fC38F6D8c56aF07bbCBe3BAf5708A2Bf42392", "USDC")],
    feeCap: "1",
  }),
  chain(1328, "Sei Testnet", "SEI", "sei-testnet", "https://evm-rpc-testnet.sei-apis.com", {
    assets: [usd("0x4fCF1784B31630811181f670Aea7A7bEF803eaED", "USDC")],
    feeCap: "1",
  }),
  chain(3338, "peaq", "PEAQ", "peaq"),
  chain(1514, "Story", "IP", "story", "https://mainnet.datarpc.io"),
  chain(41923, "EDU Chain", "EDU", "educhain", "https://rpc.educhain.xyz", { gasScale: 4 }),
  chain(324705682, "SKALE Base Sepolia", "sFUEL", "skale-base-sepolia"),
  chain(4326, "MegaETH", "ETH", "megaeth", "https://mainnet.megaeth.com/rpc", {
    assets: [
      token("0xFAfDdbb3FC7688494971a79cc65DCa3EF82079E7", "MegaUSD", "1", 18, "MegaUSD", "permit2"),
    ],
    feeCap: "0.003",
  }),
  chain(143, "Monad", "MON", "monad", "https://rpc.monad.xyz", {
    assets: [usd("0x754704Bc059F8C67012fEd69BC8A327a5aafb603", "USDC")],
    feeCap: "1",
  }),
  chain(988, "Stable", "USDT0", "stable", "https://rpc.stable.xyz", {
    assets: [token("0x779Ded0c9e1022225f8E0630b35a9b54bE713736", "USDT0", "1", 6, "USDT0")],
  }),
  chain(2201, "Stable Testnet", "USDT0", "stable-testnet", "https://rpc.testnet.stable.xyz", {
    assets: [token("0x78Cf24370174180738C5B8E352B6D14c83a6c9A9", "USDT0", "1", 6, "USDT0")],
  }),
  chain(42220, "Celo", "CELO", "celo", "https://forno.celo.org", {
    assets: [
      usd("0xcebA9300f2b948710d2653dD7B07f33A8B32118C", "USDC"),
      token("0x48065fbBE25f71C9282ddf5e1cD6D6A887483D5e", "Tether USD", "1", 6, "USDT"),
      token("0xD2ab3C9A02DBBAB236BfEC45D1d755DF4267F771", "Tether America USD", "1", 6, "USAT"),
    ],
    feeCap: "0.2",
  }),
  chain(14, "Flare", "FLR", "flare", "https://flare-api.flare.network/ext/C/rpc", {
    // "USD₮0": the token's EIP-712 name spells the tugrik sign (U+20AE), as the official table.
    assets: [token("0xe7cd86e13AC4309349F30B3435a9d337750fC82D", "USD₮0", "1", 6, "USDT0")],
    feeCap: "2",
  }),
  // Added by 2.27's table: no built-in public RPC, no v1 name; labels as viem's chains.
  newer(11142220, "Celo Sepolia", "CELO", {
    assets: [usd("0x01C5C0122039549AD1493B8220cABEdD739BC44E", "USDC")],
    feeCap: "0.2",
  }),
  newer(31612, "Mezo", "BTC", {
    assets: [mezoUsd("0xdD468A1DDc392dcdbEf6db6e34E89AA338F9F186")],
    feeCap: MEZO_FEE_CAP,
  }),
  newer(31611, "Mezo Testnet", "BTC", {
    assets: [mezoUsd("0x118917a40FAF1CD7a13dB0Ef56C86De7973Ac503")],
    feeCap: MEZO_FEE_CAP,
  }),
  newer(723487, "Radius", "RUSD", { assets: [radiusSbc] }),
  newer(72344, "Radius Testnet", "RUSD", { assets: [radiusSbc] }),
  newer(36900, "ADI Chain", "ADI", {
    assets: [token("0x9cb8142aEBBcdc60AF7c97Af897A67A8f3CA71C2", "USDC.e", "2", 6, "USDC.e")],
  }),
  newer(190415, "HPP", "ETH", { assets: [hppUsdc] }),
  newer(181228, "HPP Sepolia", "ETH", { assets: [hppUsdc] }),
  newer(50, "XDC", "XDC", { assets: [usd("0xfA2958CB79b0491CC627c1557F441eF849Ca8eb1", "USDC")] }),
  newer(51, "XDC Apothem", "TXDC", {
    assets: [usd("0xb5AB69F7bBada22B28e79C8FFAECe55eF1c771D4", "USDC")],
  }),
  newer(38833, "Igra", "iKAS", {
    assets: [
      token("0xA5b8BF902b2844dA17d4506cc827F7F1681735E7", "USDC", "1", 6, "USDC", "permit2"),
    ],
  }),
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
