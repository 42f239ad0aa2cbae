/** doctor's look at the Solana fee payer: does it hold SOL for fees on each Solana cluster served. */

import { gasAmount } from "../../../protocol/amounts.js";
import type { RpcRegistry } from "../../../rpc/rpc.js";
import { lamportsOf } from "../../../svm/exact/rpc.js";
import type { CliConfig } from "../../settings/config.js";
import { flagName } from "../../settings/setting-rows.js";
import { SETTINGS } from "../../settings/settings.js";
import type { Finding, Level } from "./doctor-checks.js";

const svm = SETTINGS.svmFeePayers;

/** Below this, a fee payer has room for only a few hundred settlements (5,000 lamports and up each). */
const LOW_LAMPORTS = 10_000_000;

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
    return [{ area: "key", level: "error", message: (error as Error).message }];
  }
  if (addresses.length === 0) {
    return [
      {
        area: "key",
        level: "warning",
        message: `no Solana fee payer key: ${networks.join(", ")} is not listed on /supported and its payments are refused`,
        fix: `set ${svm.envFile} (or ${flagName(svm.flag)}, or ${svm.key} in the config file)`,
      },
    ];
  }
  const findings: Finding[] = [];
  for (const network of networks) {
    const client = await rpc.solanaClient(network);
    for (const address of addresses) {
      try {
        const lamports = Number(await lamportsOf(client, address));
        const sol = gasAmount(BigInt(lamports), 9);
        const level: Level = lamports === 0 ? "error" : lamports < LOW_LAMPORTS ? "warning" : "ok";
        findings.push({
          area: "key",
          level,
          message: `Solana fee payer ${address} holds ${sol} SOL on ${network} for fees`,
          ...(level === "ok" ? {} : { fix: `send it some SOL on ${network}: it pays every fee` }),
        });
      } catch (error) {
        findings.push({
          area: "key",
          level: "unreachable",
          message: `Solana fee payer ${address}'s balance on ${network} could not be read (${(error as Error).message.split("\n")[0]})`,
        });
      }
    }
  }
  return findings;
}
