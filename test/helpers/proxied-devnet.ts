/**
 * A test file's devnet with RPC proxies (rpc-proxy.ts) in front of it: started before its tests,
 * every proxy closed and the devnet stopped after them. Payments are of the devnet token, signed
 * by the official x402 client, the devnet's payers in turn.
 */
import { afterAll, beforeAll } from "vitest";
import { type Devnet, startDevnet } from "../../src/evm/devnet/index.js";
import { type ProviderModes, type RpcProxy, startRpcProxy } from "./rpc-proxy.js";
import { clientPayload, requirementsV2 } from "./x402.js";

export interface ProxiedDevnet {
  readonly devnet: Devnet;
  /** A proxy in front of the devnet's RPC, closed after the file's tests. */
  proxy(modes: ProviderModes): Promise<RpcProxy>;
  /** A distinct payment of the requirements' amount (payers in turn). */
  payment(): Promise<{
    payload: Awaited<ReturnType<typeof clientPayload>>;
    requirements: ReturnType<typeof requirementsV2>;
  }>;
}

export function proxiedDevnet(): ProxiedDevnet {
  let devnet: Devnet | undefined;
  const proxies: RpcProxy[] = [];
  let payerTurn = 0;
  beforeAll(async () => {
    devnet = await startDevnet();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await devnet?.stop();
  });
  const started = () => {
    if (!devnet) throw new Error("the devnet has not started (beforeAll)");
    return devnet;
  };
  return {
    get devnet() {
      return started();
    },
    async proxy(modes) {
      const proxy = await startRpcProxy(started().rpcUrl, modes);
      proxies.push(proxy);
      return proxy;
    },
    async payment() {
      const net = started();
      const requirements = requirementsV2(net);
      const payer = net.payers[payerTurn++ % net.payers.length];
      if (!payer) throw new Error("no payers");
      return { payload: await clientPayload(payer, requirements), requirements };
    },
  };
}
