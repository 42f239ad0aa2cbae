/** A client asked for before its RPC's chain is learned: answered once it is that chain. */
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

/** `transport`, answering after `confirmed` (or throwing its error); only reads are sent before. */
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
