/** A client asked for before its RPC's chain is learned: answered once it is that chain. */
import type { Transport } from "viem";
import { aroundRequests } from "./provider-limits.js";

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
  return aroundRequests(transport, async (method, send) => {
    if (passed) return send();
    if (!READS.has(method)) return confirmed.then(send);
    const [answer, check] = await Promise.allSettled([send(), confirmed]);
    if (check.status === "rejected") throw check.reason;
    if (answer.status === "rejected") throw answer.reason;
    return answer.value;
  });
}
