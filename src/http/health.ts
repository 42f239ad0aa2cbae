/**
 * GET /health: does each configured RPC answer, and how fast (liveness). GET /readyz: that, plus
 * the store, plus enough native balance for every signer on every configured chain and SOL for
 * every Solana fee payer on every served cluster (readiness).
 */
import type { Address } from "viem";
import type { StoreStatus } from "../core/store.js";
import type { Facilitator } from "../facilitator.js";
import { caip2 } from "../protocol/networks.js";
import { lamportsOf } from "../svm/exact/rpc.js";

export interface NetworkHealth {
  readonly network?: string | undefined;
  readonly rpc: string;
  readonly ok: boolean;
  readonly blockNumber?: string | undefined;
  readonly latencyMs?: number | undefined;
  readonly error?: string | undefined;
}

/** A settlement key whose transaction at `nonce` the node does not mine: it sends nothing past it. */
export interface BlockedKey {
  readonly network: string;
  readonly signer: string;
  readonly nonce: number;
  /** Since when (ISO time) that nonce has been waiting. */
  readonly since: string;
  readonly reason: string;
}

export interface Health {
  readonly status: "ok" | "degraded";
  readonly networks: NetworkHealth[];
  readonly signer?: string | undefined;
  readonly store: StoreStatus;
  /** Keys blocked by a hole they cannot fill (their work goes to other keys, or is refused). */
  readonly blockedKeys: BlockedKey[];
}

/** The facilitator's blocked keys, as /health and /readyz show them. */
export function blockedKeys(facilitator: Facilitator): BlockedKey[] {
  return facilitator.signers.holes().map((hole) => ({
    network: caip2(hole.chainId),
    signer: hole.signer,
    nonce: hole.nonce,
    since: new Date(hole.since).toISOString(),
    reason: hole.reason,
  }));
}

const PROBE_TIMEOUT_MS = 3_000;

/** `promise`, or a rejection "timed out" after `ms`: a dead node must not hang a probe. */
export function withTimeout<T>(promise: Promise<T>, ms: number = PROBE_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timed out")), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const firstLine = (error: unknown) =>
  error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error);

async function probe(
  facilitator: Facilitator,
  chainId: number,
  rpc: string,
): Promise<NetworkHealth> {
  const started = performance.now();
  try {
    const client = await facilitator.rpc.client(chainId);
    const block = await withTimeout(client.getBlockNumber({ cacheTime: 0 }));
    const latencyMs = Math.round(performance.now() - started);
    return { network: caip2(chainId), rpc, ok: true, blockNumber: block.toString(), latencyMs };
  } catch (error) {
    return { network: caip2(chainId), rpc, ok: false, error: firstLine(error) };
  }
}

/** A Solana cluster's RPC: its slot instead of a block number. */
async function probeSolana(
  facilitator: Facilitator,
  network: string,
  rpc: string,
): Promise<NetworkHealth> {
  const started = performance.now();
  try {
    const client = await facilitator.rpc.solanaClient(network);
    const slot = await withTimeout(
      client.request({ method: "getSlot", params: [{ commitment: "confirmed" }] } as never),
    );
    const latencyMs = Math.round(performance.now() - started);
    return { network, rpc, ok: true, blockNumber: String(slot), latencyMs };
  } catch (error) {
    return { network, rpc, ok: false, error: firstLine(error) };
  }
}

export async function checkHealth(facilitator: Facilitator): Promise<Health> {
  const endpoints = await facilitator.rpc.endpoints();
  const networks = await Promise.all(
    endpoints.map((endpoint) =>
      endpoint.solana !== undefined
        ? probeSolana(facilitator, endpoint.solana, endpoint.url)
        : endpoint.chainId === undefined
          ? Promise.resolve<NetworkHealth>({ rpc: endpoint.url, ok: false, error: "unreachable" })
          : probe(facilitator, endpoint.chainId, endpoint.url),
    ),
  );
  const journal = facilitator.journal;
  const store = await withTimeout(Promise.resolve(journal.status())).catch(
    (error): StoreStatus => ({
      shared: journal.shared,
      where: journal.where,
      reachable: false,
      error: firstLine(error),
    }),
  );
  const storeOk = store.reachable && (store.signersLost?.length ?? 0) === 0;
  return {
    status: networks.every((n) => n.ok) && storeOk ? "ok" : "degraded",
    networks,
    signer: facilitator.signerAddress,
    store,
    blockedKeys: blockedKeys(facilitator),
  };
}

export interface SignerBalance {
  readonly network: string;
  readonly chainId: number;
  readonly signer: Address;
  /** Wei of the chain's native token; absent when it could not be read. */
  readonly balanceWei?: bigint | undefined;
  readonly error?: string | undefined;
}

/**
 * Each signer's native balance on each chain of a configured RPC (not the public RPCs' chains: a
 * signer is not expected to hold gas on every well-known chain), each read bounded by `timeoutMs`.
 */
export async function signerBalances(
  facilitator: Facilitator,
  timeoutMs: number = PROBE_TIMEOUT_MS,
): Promise<SignerBalance[]> {
  const chainIds = await withTimeout(facilitator.rpc.configuredChainIds(), timeoutMs);
  const reads = chainIds.flatMap((chainId) =>
    facilitator.signers.addresses.map(async (signer): Promise<SignerBalance> => {
      const network = caip2(chainId);
      try {
        const client = await facilitator.rpc.client(chainId);
        const balanceWei = await withTimeout(client.getBalance({ address: signer }), timeoutMs);
        return { network, chainId, signer, balanceWei };
      } catch (error) {
        return { network, chainId, signer, error: firstLine(error) };
      }
    }),
  );
  return Promise.all(reads);
}

/**
 * Below this a Solana fee payer cannot be counted on: an account must keep its rent-exempt
 * minimum (890,880 lamports with no data), and each settlement costs it 10,000 lamports and up.
 */
export const MIN_FEE_PAYER_LAMPORTS = 1_000_000n;

export interface FeePayerBalance {
  readonly network: string;
  readonly feePayer: string;
  readonly lamports?: bigint | undefined;
  readonly error?: string | undefined;
}

/** Each Solana fee payer's SOL on each served cluster, each read bounded by `timeoutMs`. */
export async function feePayerBalances(
  facilitator: Facilitator,
  timeoutMs: number = PROBE_TIMEOUT_MS,
): Promise<FeePayerBalance[]> {
  const feePayers = facilitator.svmFeePayers;
  if (feePayers.length === 0) return [];
  const networks = await withTimeout(facilitator.rpc.servedSolanaNetworks(), timeoutMs);
  const reads = networks.flatMap((network) =>
    feePayers.map(async (feePayer): Promise<FeePayerBalance> => {
      try {
        const client = await facilitator.rpc.solanaClient(network);
        const lamports = await withTimeout(lamportsOf(client, feePayer), timeoutMs);
        return { network, feePayer, lamports };
      } catch (error) {
        return { network, feePayer, error: firstLine(error) };
      }
    }),
  );
  return Promise.all(reads);
}

export interface ReadinessOptions {
  /** Each signer needs at least this much native balance on each chain (default 1 wei). */
  readonly minSignerBalanceWei?: bigint | undefined;
}

export interface Readiness {
  readonly ready: boolean;
  /**
   * The checks that failed: "rpc", "store", "signer_balance", "fee_payer_balance",
   * "signer_blocked" (every key of a chain is blocked: `blockedKeys`).
   */
  readonly failed: string[];
  readonly networks: NetworkHealth[];
  readonly store: StoreStatus;
  readonly minSignerBalanceWei: string;
  readonly signers: {
    readonly network: string;
    readonly signer: string;
    readonly ok: boolean;
    readonly balanceWei?: string | undefined;
    readonly error?: string | undefined;
  }[];
  /** Solana fee payers: each needs MIN_FEE_PAYER_LAMPORTS on each served cluster. */
  readonly feePayers: {
    readonly network: string;
    readonly feePayer: string;
    readonly ok: boolean;
    readonly lamports?: string | undefined;
    readonly error?: string | undefined;
  }[];
  readonly blockedKeys: BlockedKey[];
}

export const DEFAULT_MIN_SIGNER_BALANCE_WEI = 1n;

/** GET /readyz: every configured RPC answers, the store answers, every signer has gas. */
export async function checkReadiness(
  facilitator: Facilitator,
  options: ReadinessOptions = {},
): Promise<Readiness> {
  const floor = options.minSignerBalanceWei ?? DEFAULT_MIN_SIGNER_BALANCE_WEI;
  const [health, balances, solana] = await Promise.all([
    checkHealth(facilitator),
    signerBalances(facilitator).catch((error): SignerBalance[] => [
      ...facilitator.signers.addresses.map((signer) => ({
        network: "unknown",
        chainId: 0,
        signer,
        error: firstLine(error),
      })),
    ]),
    feePayerBalances(facilitator).catch((error): FeePayerBalance[] =>
      facilitator.svmFeePayers.map((feePayer) => ({
        network: "unknown",
        feePayer,
        error: firstLine(error),
      })),
    ),
  ]);
  const signers = balances.map((b) => ({
    network: b.network,
    signer: b.signer,
    ok: b.balanceWei !== undefined && b.balanceWei >= floor,
    ...(b.balanceWei !== undefined ? { balanceWei: b.balanceWei.toString() } : {}),
    ...(b.error !== undefined ? { error: b.error } : {}),
  }));
  const feePayers = solana.map((b) => ({
    network: b.network,
    feePayer: b.feePayer,
    ok: b.lamports !== undefined && b.lamports >= MIN_FEE_PAYER_LAMPORTS,
    ...(b.lamports !== undefined ? { lamports: b.lamports.toString() } : {}),
    ...(b.error !== undefined ? { error: b.error } : {}),
  }));
  const failed = [
    ...(health.networks.every((n) => n.ok) ? [] : ["rpc"]),
    // A replica that lost a signer's lease cannot settle with it.
    ...(health.store.reachable && (health.store.signersLost?.length ?? 0) === 0 ? [] : ["store"]),
    ...(signers.every((s) => s.ok) ? [] : ["signer_balance"]),
    ...(feePayers.every((f) => f.ok) ? [] : ["fee_payer_balance"]),
    // Every key of a chain blocked: nothing can be settled there until one is unblocked.
    ...(everyKeyBlocked(facilitator, health.blockedKeys) ? ["signer_blocked"] : []),
  ];
  return {
    ready: failed.length === 0,
    failed,
    networks: health.networks,
    store: health.store,
    minSignerBalanceWei: floor.toString(),
    signers,
    feePayers,
    blockedKeys: health.blockedKeys,
  };
}

function everyKeyBlocked(facilitator: Facilitator, blocked: readonly BlockedKey[]): boolean {
  const perNetwork = new Map<string, number>();
  for (const key of blocked) perNetwork.set(key.network, (perNetwork.get(key.network) ?? 0) + 1);
  const keys = facilitator.signers.size;
  return keys > 0 && [...perNetwork.values()].some((count) => count >= keys);
}
