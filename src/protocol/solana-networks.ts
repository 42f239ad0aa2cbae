/** Solana clusters: CAIP-2 `solana:<genesis hash prefix>`; ids and v1 names as @x402/svm 2.27.0. */
import { base58ToBytes } from "./base58.js";

export interface SolanaCluster {
  readonly network: string;
  readonly v1Name: string;
  readonly label: string;
}

const cluster = (genesis: string, v1Name: string, label: string): SolanaCluster => ({
  network: `solana:${genesis}`,
  v1Name,
  label,
});

export const SOLANA_CLUSTERS: readonly SolanaCluster[] = [
  cluster("5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "solana", "Solana"),
  cluster("EtWTRABZaYq6iMfeYKouRu166VU2xqa1", "solana-devnet", "Solana Devnet"),
  cluster("4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z", "solana-testnet", "Solana Testnet"),
];

/** Mints known by their address, for messages: Circle's USDC on mainnet and on devnet. */
const KNOWN_MINTS: Readonly<Record<string, string>> = {
  EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v: "USDC",
  "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU": "USDC",
};

/** The symbol of a mint this table knows. */
export function knownMintSymbol(mint: string): string | undefined {
  return Object.hasOwn(KNOWN_MINTS, mint) ? KNOWN_MINTS[mint] : undefined;
}

const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/;

/** The CAIP-2 id of the cluster with this genesis hash, or undefined when it is not one. */
export function solanaNetworkOfGenesisHash(hash: unknown): string | undefined {
  if (typeof hash !== "string" || hash.length < 32 || hash.length > 44 || !BASE58.test(hash)) {
    return undefined;
  }
  return `solana:${hash.slice(0, 32)}`;
}

/** The v2 id of a Solana network as a request names it (v1 name or CAIP-2), or undefined. */
export function solanaNetworkOf(network: string, x402Version: 1 | 2): string | undefined {
  if (x402Version === 1) return SOLANA_CLUSTERS.find((c) => c.v1Name === network)?.network;
  return /^solana:[1-9A-HJ-NP-Za-km-z]{32}$/.test(network) ? network : undefined;
}

/** Whether a request's network looks Solana's, in either form (for routing and hints). */
export function looksSolana(network: string): boolean {
  return network === "solana" || network.startsWith("solana-") || network.startsWith("solana:");
}

export function solanaCluster(network: string): SolanaCluster | undefined {
  return SOLANA_CLUSTERS.find((c) => c.network === network);
}

/** Whether `text` is a Solana address: base58 of 32 bytes. */
export function isSolanaAddress(text: unknown): text is string {
  if (typeof text !== "string" || !/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(text)) return false;
  return base58ToBytes(text)?.length === 32;
}
