/**
 * GET /health (liveness): does each configured RPC answer, and how fast. GET /readyz (readiness):
 * that, the store, gas for every signer and SOL for every Solana fee payer.
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
  readonly blockedKeys: BlockedKey[];
}

const PROBE_TIMEOUT_MS = 3_000;

/** `promise`, or a rejection "timed out" after `ms`: a dead node must not hang a probe. */
function withTimeout<T>(promise: Promise<T>, ms: number = PROBE_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timed out")), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const firstLine = (error: unknown) =>
  error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error);

/** An RPC's height (a block number, or a Solana slot) and latency, or why it failed. */
async function probe(
  network: string,
  rpc: string,
  height: () => Promise<unknown>,
): Promise<NetworkHealth> {
  const started = performance.now();
  try {
    const blockNumber = String(await height());
    const latencyMs = Math.round(performance.now() - started);
    return { network, rpc, ok: true, blockNumber, latencyMs };
  } catch (error) {
    return { network, rpc, ok: false, error: firstLine(error) };
  }
}

/** A lost signer lease counts as a store failure: a replica cannot settle with it. */
const storeOk = (store: StoreStatus) => store.reachable && (store.signersLost?.length ?? 0) === 0;

export async function checkHealth(facilitator: Facilitator): Promise<Health> {
  const { rpc, journal } = facilitator;
  const networks = await Promise.all(
    (await rpc.endpoints()).map(({ url, chainId, solana }) => {
      if (solana !== undefined) {
        return probe(solana, url, async () => {
          const client = await rpc.solanaClient(solana);
          const params = [{ commitment: "confirmed" }];
          return withTimeout(client.request({ method: "getSlot", params } as never));
        });
      }
      if (chainId === undefined) {
        return Promise.resolve<NetworkHealth>({ rpc: url, ok: false, error: "unreachable" });
      }
      return probe(caip2(chainId), url, async () =>
        withTimeout((await rpc.client(chainId)).getBlockNumber({ cacheTime: 0 })),
      );
    }),
  );
  const store = await withTimeout(Promise.resolve(journal.status())).catch(
    (error): StoreStatus => ({
      shared: journal.shared,
      where: journal.where,
      reachable: false,
      error: firstLine(error),
    }),
  );
  return {
    status: networks.every((n) => n.ok) && storeOk(store) ? "ok" : "degraded",
    networks,
    signer: facilitator.signerAddress,
    store,
    blockedKeys: facilitator.signers.holes().map((hole) => ({
      network: caip2(hole.chainId),
      signer: hole.signer,
      nonce: hole.nonce,
      since: new Date(hole.since).toISOString(),
      reason: hole.reason,
    })),
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

/** Each signer's native balance on each configured RPC's chain (not public ones'), bounded. */
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

/** A Solana fee payer's floor: its rent-exempt minimum (890,880) plus fees of 10,000 and up. */
const MIN_FEE_PAYER_LAMPORTS = 1_000_000n;

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

/** A balance as /readyz shows it: whether it is enough, the amount as a string, or the error. */
type Shown<K extends string> = { ok: boolean; error?: string } & { [key in K]?: string };

function shown<K extends string>(
  key: K,
  amount: bigint | undefined,
  floor: bigint,
  error?: string,
) {
  return {
    ok: amount !== undefined && amount >= floor,
    ...(amount !== undefined ? { [key]: amount.toString() } : {}),
    ...(error !== undefined ? { error } : {}),
  } as Shown<K>;
}

export interface Readiness {
  readonly ready: boolean;
  /** "rpc", "store", "signer_balance", "fee_payer_balance", "signer_blocked" (a chain's every key). */
  readonly failed: string[];
  readonly networks: NetworkHealth[];
  readonly store: StoreStatus;
  readonly minSignerBalanceWei: string;
  readonly signers: ({ network: string; signer: string } & Shown<"balanceWei">)[];
  /** Solana fee payers: each needs MIN_FEE_PAYER_LAMPORTS on each served cluster. */
  readonly feePayers: ({ network: string; feePayer: string } & Shown<"lamports">)[];
  readonly blockedKeys: BlockedKey[];
}

/** GET /readyz: every configured RPC answers, the store answers, every signer has gas. */
export async function checkReadiness(
  facilitator: Facilitator,
  options: { readonly minSignerBalanceWei?: bigint | undefined } = {},
): Promise<Readiness> {
  const floor = options.minSignerBalanceWei ?? 1n;
  const unknown = (error: unknown) => ({ network: "unknown", error: firstLine(error) });
  const [health, balances, solana] = await Promise.all([
    checkHealth(facilitator),
    signerBalances(facilitator).catch((error): SignerBalance[] =>
      facilitator.signers.addresses.map((signer) => ({ ...unknown(error), chainId: 0, signer })),
    ),
    feePayerBalances(facilitator).catch((error): FeePayerBalance[] =>
      facilitator.svmFeePayers.map((feePayer) => ({ ...unknown(error), feePayer })),
    ),
  ]);
  const signers = balances.map(({ network, signer, balanceWei, error }) => ({
    network,
    signer,
    ...shown("balanceWei", balanceWei, floor, error),
  }));
  const feePayers = solana.map(({ network, feePayer, lamports, error }) => ({
    network,
    feePayer,
    ...shown("lamports", lamports, MIN_FEE_PAYER_LAMPORTS, error),
  }));
  const failed = [
    ...(health.networks.every((n) => n.ok) ? [] : ["rpc"]),
    ...(storeOk(health.store) ? [] : ["store"]),
    ...(signers.every((s) => s.ok) ? [] : ["signer_balance"]),
    ...(feePayers.every((f) => f.ok) ? [] : ["fee_payer_balance"]),
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

/** Every key of a chain blocked: nothing can be settled there until one is unblocked. */
function everyKeyBlocked(facilitator: Facilitator, blocked: readonly BlockedKey[]): boolean {
  const perNetwork = new Map<string, number>();
  for (const key of blocked) perNetwork.set(key.network, (perNetwork.get(key.network) ?? 0) + 1);
  const keys = facilitator.signers.size;
  return keys > 0 && [...perNetwork.values()].some((count) => count >= keys);
}
