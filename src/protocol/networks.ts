/**
 * Networks are data: x402 v1 names and CAIP-2 ids map to chain ids, a default public RPC and the
 * chain's USDC. Payments on any other chain work when an RPC for it is configured, using the token
 * data the requirements carry.
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
}

export interface KnownNetwork {
  readonly chainId: number;
  /** The x402 v1 network name, where v1 has one. */
  readonly v1Name?: string;
  readonly label: string;
  readonly defaultRpcUrl?: string;
  readonly usdc?: KnownAsset;
  /** The native token's symbol, for messages. */
  readonly native?: string;
  /**
   * The most one settlement may cost by default, in the native token: a settlement's gas bound
   * at a price well above the chain's busy hours, so a fee spike stops settles before it drains
   * the key (DEFAULT_SETTLE_FEE_CAP where unset). docs/settling-safely.md has the reasoning.
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

export const KNOWN_NETWORKS: readonly KnownNetwork[] = [
  {
    chainId: 1,
    v1Name: "ethereum",
    label: "Ethereum",
    defaultRpcUrl: "https://ethereum.reth.rs/rpc",
    usdc: usd("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"),
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
    usdc: usd("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
    native: "ETH",
    feeCap: "0.003",
  },
  {
    chainId: 84532,
    v1Name: "base-sepolia",
    label: "Base Sepolia",
    defaultRpcUrl: "https://sepolia.base.org",
    usdc: usd("0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC"),
    native: "ETH",
    feeCap: "0.003",
  },
  {
    chainId: 43114,
    v1Name: "avalanche",
    label: "Avalanche",
    defaultRpcUrl: "https://api.avax.network/ext/bc/C/rpc",
    usdc: usd("0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E"),
    native: "AVAX",
    feeCap: "0.1",
  },
  {
    chainId: 43113,
    v1Name: "avalanche-fuji",
    label: "Avalanche Fuji",
    defaultRpcUrl: "https://api.avax-test.network/ext/bc/C/rpc",
    usdc: usd("0x5425890298aed601595a70AB815c96711a31Bc65"),
    native: "AVAX",
    feeCap: "0.1",
  },
  {
    chainId: 137,
    v1Name: "polygon",
    label: "Polygon",
    defaultRpcUrl: "https://polygon.drpc.org",
    usdc: usd("0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359"),
    native: "POL",
    feeCap: "2",
  },
  {
    chainId: 80002,
    v1Name: "polygon-amoy",
    label: "Polygon Amoy",
    defaultRpcUrl: "https://polygon-amoy.drpc.org",
    usdc: usd("0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582", "USDC"),
    native: "POL",
    feeCap: "2",
  },
  {
    chainId: 42161,
    label: "Arbitrum One",
    defaultRpcUrl: "https://arb1.arbitrum.io/rpc",
    usdc: usd("0xaf88d065e77c8cC2239327C5EDb3A432268e5831"),
    native: "ETH",
    feeCap: "0.003",
    gasScale: 4,
  },
  {
    chainId: 421614,
    label: "Arbitrum Sepolia",
    defaultRpcUrl: "https://sepolia-rollup.arbitrum.io/rpc",
    usdc: usd("0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d"),
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
    usdc: {
      ...usd("0xcdf79194c6c285077a58da47641d4dbe51f63542", "Bridged USDC"),
      symbol: undefined,
    },
    native: "IOTX",
    feeCap: "2",
  },
  {
    chainId: 1329,
    v1Name: "sei",
    label: "Sei",
    defaultRpcUrl: "https://evm-rpc.sei-apis.com",
    usdc: usd("0xe15fC38F6D8c56aF07bbCBe3BAf5708A2Bf42392", "USDC"),
    native: "SEI",
    feeCap: "1",
  },
  {
    chainId: 1328,
    v1Name: "sei-testnet",
    label: "Sei Testnet",
    defaultRpcUrl: "https://evm-rpc-testnet.sei-apis.com",
    usdc: usd("0x4fCF1784B31630811181f670Aea7A7bEF803eaED", "USDC"),
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
    native: "ETH",
    feeCap: "0.003",
  },
  {
    chainId: 143,
    v1Name: "monad",
    label: "Monad",
    defaultRpcUrl: "https://rpc.monad.xyz",
    usdc: usd("0x754704Bc059F8C67012fEd69BC8A327a5aafb603", "USDC"),
    native: "MON",
    feeCap: "1",
  },
  {
    chainId: 988,
    v1Name: "stable",
    label: "Stable",
    defaultRpcUrl: "https://rpc.stable.xyz",
    native: "USDT0",
  },
  {
    chainId: 2201,
    v1Name: "stable-testnet",
    label: "Stable Testnet",
    defaultRpcUrl: "https://rpc.testnet.stable.xyz",
    native: "USDT0",
  },
  {
    chainId: 42220,
    v1Name: "celo",
    label: "Celo",
    defaultRpcUrl: "https://forno.celo.org",
    usdc: usd("0xcebA9300f2b948710d2653dD7B07f33A8B32118C", "USDC"),
    native: "CELO",
    feeCap: "0.2",
  },
  {
    chainId: 14,
    v1Name: "flare",
    label: "Flare",
    defaultRpcUrl: "https://flare-api.flare.network/ext/C/rpc",
    native: "FLR",
    feeCap: "2",
  },
];

const byChainId = new Map(KNOWN_NETWORKS.map((n) => [n.chainId, n]));
const byV1Name = new Map(KNOWN_NETWORKS.flatMap((n) => (n.v1Name ? [[n.v1Name, n]] : [])));

export function knownNetwork(chainId: number): KnownNetwork | undefined {
  return byChainId.get(chainId);
}

/** The decimals and symbol of a token this table knows (a chain's USDC), for messages. */
export function knownToken(chainId: number, asset: string): TokenUnits | undefined {
  const usdc = byChainId.get(chainId)?.usdc;
  if (!usdc || usdc.address.toLowerCase() !== asset.toLowerCase()) return undefined;
  return { decimals: usdc.decimals, symbol: usdc.symbol };
}

/** The chain id of an x402 v1 network name, if v1 knows the name. */
export function chainIdOfV1Name(name: string): number | undefined {
  return byV1Name.get(name)?.chainId;
}

export type Caip2 = `eip155:${number}`;

const CAIP2_EIP155 = /^eip155:([1-9][0-9]{0,15})$/;

/** The chain id of a CAIP-2 `eip155:<id>` network, or undefined for anything else. */
export function chainIdOfCaip2(network: string): number | undefined {
  const match = CAIP2_EIP155.exec(network);
  if (!match) return undefined;
  const id = Number(match[1]);
  return Number.isSafeInteger(id) ? id : undefined;
}

export function caip2(chainId: number): Caip2 {
  return `eip155:${chainId}`;
}
