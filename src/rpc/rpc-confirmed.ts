/**
 * A client asked for a chain before its RPC's chain is learned (rpc.ts): its reads go out beside
 * the `eth_chainId` that learns it, one round trip saved at a distance, and are answered only
 * once that chain is the one asked for.
 */
import type { Transport } from "viem";

/** What may go out before the URL's chain is known to be the one asked for: reads only. */
const READS = new Set([
  "eth_blockNumber",
  "eth_call",
  "eth_chainId",
  "eth_estimateGas",
  "eth_feeHistory",
  "eth_gasPrice",
  "eth_getBalance",
  "eth_getBlockByNumber",
  "eth_getCode",
  "eth_getTransactionByHash",
  "eth_getTransactionCount",
  "eth_getTransactionReceipt",
  "eth_maxPriorityFeePerGas",
  "web3_clientVersion",
]);

/**
 * `transport`, whose answers wait for `confirmed` (the URL serves the chain asked for) and throw
 * its error if it fails; anything but a read is not sent before it passes.
 */
export function answeredOnceConfirmed(transport: Transport, confirmed: Promise<void>): Transport {
  let passed = false;
  confirmed.then(
    () => {
      passed = true;
    },
    () => undefined,
  );
  return (params) => {
    const built = transport(params);
    const request = (async (args, options) => {
      if (passed) return built.request(args, options);
      if (!READS.has(args.method)) {
        await confirmed;
        return built.request(args, options);
      }
      const [answer, check] = await Promise.allSettled([built.request(args, options), confirmed]);
      if (check.status === "rejected") throw check.reason;
      if (answer.status === "rejected") throw answer.reason;
      return answer.value;
    }) as typeof built.request;
    return { ...built, request };
  };
}
