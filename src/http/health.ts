/** GET /health: does each configured RPC answer, and how fast. */
import { caip2 } from "../chain/networks.js";
import type { Facilitator } from "../facilitator.js";
import type { StoreStatus } from "../store/port.js";

export interface NetworkHealth {
  readonly network?: string | undefined;
  readonly rpc: string;
  readonly ok: boolean;
  readonly blockNumber?: string | undefined;
  readonly latencyMs?: number | undefined;
  readonly error?: string | undefined;
}

export interface Health {
  readonly status: "ok" | "degraded";
  readonly networks: NetworkHealth[];
  readonly signer?: string | undefined;
  readonly store: StoreStatus;
}

const PROBE_TIMEOUT_MS = 3_000;

async function probe(
  facilitator: Facilitator,
  chainId: number,
  rpc: string,
): Promise<NetworkHealth> {
  const started = performance.now();
  try {
    const client = await facilitator.rpc.client(chainId);
    const block = await Promise.race([
      client.getBlockNumber({ cacheTime: 0 }),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error("timed out")), PROBE_TIMEOUT_MS).unref(),
      ),
    ]);
    const latencyMs = Math.round(performance.now() - started);
    return { network: caip2(chainId), rpc, ok: true, blockNumber: block.toString(), latencyMs };
  } catch (error) {
    const text = error instanceof Error ? error.message.split("\n")[0] : String(error);
    return { network: caip2(chainId), rpc, ok: false, error: text };
  }
}

export async function checkHealth(facilitator: Facilitator): Promise<Health> {
  const endpoints = await facilitator.rpc.endpoints();
  const networks = await Promise.all(
    endpoints.map((endpoint) =>
      endpoint.chainId === undefined
        ? Promise.resolve<NetworkHealth>({ rpc: endpoint.url, ok: false, error: "unreachable" })
        : probe(facilitator, endpoint.chainId, endpoint.url),
    ),
  );
  const store = await facilitator.journal.status();
  const storeOk = store.reachable && (store.signersLost?.length ?? 0) === 0;
  return {
    status: networks.every((n) => n.ok) && storeOk ? "ok" : "degraded",
    networks,
    signer: facilitator.signerAddress,
    store,
  };
}
