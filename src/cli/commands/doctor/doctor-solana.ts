/** doctor's look at the Solana fee payer: does it hold SOL for fees on each Solana cluster served. */

import { gasAmount } from "../../../protocol/amounts.js";
import type { RpcRegistry } from "../../../rpc/rpc.js";
import { lamportsOf } from "../../../svm/exact/rpc.js";
import type { CliConfig } from "../../settings/config.js";
import { flagName } from "../../settings/setting-rows.js";
import { SETTINGS } from "../../settings/settings.js";
import { balanceFinding, errorFinding, type Finding, finding } from "./doctor-checks.js";

const svm = SETTINGS.svmFeePayers;

/** Below this, a fee payer has room for only a few hundred settlements (5,000 lamports and up each). */
const LOW_LAMPORTS = 10_000_000n;

export async function checkSolanaFeePayers(
  rpc: RpcRegistry,
  config: CliConfig,
): Promise<Finding[]> {
  const networks = await rpc.servedSolanaNetworks();
  if (networks.length === 0) return [];
  let addresses: string[];
  try {
    addresses = config.loadSvmFeePayers().map((key) => key.address);
  } catch (error) {
    return [errorFinding("key", error)];
  }
  if (addresses.length === 0) {
    return [
      finding(
        "key",
        "warning",
        `no Solana fee payer key: ${networks.join(", ")} is not listed on /supported and its payments are refused`,
        `set ${svm.envFile} (or ${flagName(svm.flag)}, or ${svm.key} in the config file)`,
      ),
    ];
  }
  const findings: Finding[] = [];
  for (const network of networks) {
    const client = await rpc.solanaClient(network);
    for (const address of addresses) {
      findings.push(
        await balanceFinding(
          () => lamportsOf(client, address),
          LOW_LAMPORTS,
          (lamports) =>
            `Solana fee payer ${address} holds ${gasAmount(lamports, 9)} SOL on ${network} for fees`,
          `send it some SOL on ${network}: it pays every fee`,
          (error) =>
            `Solana fee payer ${address}'s balance on ${network} could not be read (${(error as Error).message.split("\n")[0]})`,
        ),
      );
    }
  }
  return findings;
}
