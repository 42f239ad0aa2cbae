/** GET /health (each RPC answers, how fast) and GET /readyz (that, the store, gas and SOL). */
import type { StoreStatus } from "../core/store.js";
import type { Facilitator } from "../facilitator.js";
import { caip2 } from "../protocol/networks.js";
import { firstLine } from "../protocol/words.js";
import { lamportsOf } from "../svm/exact/rpc.js";

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

/** An RPC's height (a block number, or a Solana slot) and latency, or why it failed. */
async function probe(network: string | undefined, rpc: string, height: () => Promise<unknown>) {
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

export async function checkHealth(facilitator: Facilitator) {
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
        return probe(undefined, url, () => Promise.reject(new Error("unreachable")));
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
    // A settlement key whose transaction at `nonce` the node does not mine: it sends nothing past it.
    blockedKeys: facilitator.signers.holes().map((hole) => ({
      network: caip2(hole.chainId),
      signer: hole.signer,
      nonce: hole.nonce,
      since: new Date(hole.since).toISOString(),
      reason: hole.reason,
    })),
  };
}

/** Each of `holders` read on each network, bounded: the amount, or why it could not be. */
async function readEach<N, H extends string, A>(
  networks: Promise<readonly N[]>,
  holders: readonly H[],
  read: (network: N, holder: H) => Promise<A>,
  timeoutMs: number,
): Promise<{ network: N | "unknown"; holder: H; amount?: A; error?: string }[]> {
  const unread = (network: N | "unknown", holder: H, error: unknown) =>
    ({ network, holder, error: firstLine(error) }) as const;
  let learned: readonly N[];
  try {
    learned = await withTimeout(networks, timeoutMs);
  } catch (error) {
    // Every holder, when the networks to read them on could not be learned.
    return holders.map((holder) => unread("unknown", holder, error));
  }
  const reads = learned.flatMap((network) =>
    holders.map(async (holder) => {
      try {
        return { network, holder, amount: await withTimeout(read(network, holder), timeoutMs) };
      } catch (error) {
        return unread(network, holder, error);
      }
    }),
  );
  return Promise.all(reads);
}

/** Each signer's native balance (wei) on each configured RPC's chain (not public ones'), bounded. */
export async function signerBalances(facilitator: Facilitator, timeoutMs = PROBE_TIMEOUT_MS) {
  const balance = async (chainId: number, address: `0x${string}`) =>
    (await facilitator.rpc.client(chainId)).getBalance({ address });
  const chainIds = facilitator.rpc.configuredChainIds();
  return readEach(chainIds, facilitator.signers.addresses, balance, timeoutMs);
}

/** A Solana fee payer's floor: its rent-exempt minimum (890,880) plus fees of 10,000 and up. */
const MIN_FEE_PAYER_LAMPORTS = 1_000_000n;

/** Each Solana fee payer's SOL (lamports) on each served cluster, each read bounded. */
export async function feePayerBalances(facilitator: Facilitator, timeoutMs = PROBE_TIMEOUT_MS) {
  const feePayers = facilitator.svmFeePayers;
  if (feePayers.length === 0) return [];
  const lamports = async (network: string, feePayer: string) =>
    lamportsOf(await facilitator.rpc.solanaClient(network), feePayer);
  return readEach(facilitator.rpc.servedSolanaNetworks(), feePayers, lamports, timeoutMs);
}

/** A balance as /readyz shows it: whether it is enough, the amount as a string, or the error. */
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
  } as { ok: boolean; error?: string } & { [key in K]?: string };
}

/** GET /readyz: every configured RPC answers, the store answers, every signer has gas. */
export async function checkReadiness(
  facilitator: Facilitator,
  options: { readonly minSignerBalanceWei?: bigint | undefined } = {},
) {
  const floor = options.minSignerBalanceWei ?? 1n;
  const [health, balances, solana] = await Promise.all([
    checkHealth(facilitator),
    signerBalances(facilitator),
    feePayerBalances(facilitator),
  ]);
  const signers = balances.map(({ network, holder, amount, error }) => ({
    network: typeof network === "number" ? caip2(network) : network,
    signer: holder,
    ...shown("balanceWei", amount, floor, error),
  }));
  // Solana fee payers: each needs MIN_FEE_PAYER_LAMPORTS on each served cluster.
  const feePayers = solana.map(({ network, holder, amount, error }) => ({
    network,
    feePayer: holder,
    ...shown("lamports", amount, MIN_FEE_PAYER_LAMPORTS, error),
  }));
  // "rpc", "store", "signer_balance", "fee_payer_balance", "signer_blocked" (a chain's every key).
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
function everyKeyBlocked(facilitator: Facilitator, blocked: readonly { network: string }[]) {
  const perNetwork = new Map<string, number>();
  for (const key of blocked) perNetwork.set(key.network, (perNetwork.get(key.network) ?? 0) + 1);
  const keys = facilitator.signers.size;
  return keys > 0 && [...perNetwork.values()].some((count) => count >= keys);
}
