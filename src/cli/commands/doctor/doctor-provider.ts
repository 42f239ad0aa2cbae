/** RPC rate and batch-size refusals doctor met: waited out or split, so only warnings. */
import type { RpcRegistry } from "../../../rpc/rpc.js";
import { waysToSet } from "../../settings/setting-rows.js";
import { SETTINGS } from "../../settings/settings.js";
import { type Finding, finding } from "./doctor-checks.js";

export function checkProviderLimits(rpc: RpcRegistry): Finding[] {
  return rpc.providerLimits().flatMap(({ url, rateLimited, calls, refusedBatches, batchLimit }) => {
    const findings: Finding[] = [];
    if (rateLimited > 0) {
      findings.push(
        finding(
          "rpc",
          "warning",
          `${url} rate-limited ${rateLimited} of ${calls} calls (HTTP 429 or "limit exceeded"); each was sent again after the wait it asked for (at most 2 s)`,
          `settles wait on it too: raise the plan's rate limit, or add a second RPC for the chain with ${waysToSet(SETTINGS.rpcUrls)} to fail over to`,
        ),
      );
    }
    if (refusedBatches > 0) {
      findings.push(
        finding(
          "rpc",
          "warning",
          `${url} refused ${refusedBatches} batch request${refusedBatches === 1 ? "" : "s"} as too large; batches to it now carry at most ${batchLimit} call${batchLimit === 1 ? "" : "s"}`,
          `set its limit with ${waysToSet(SETTINGS.rpcBatchLimit)} so that no batch is refused`,
        ),
      );
    }
    return findings;
  });
}
