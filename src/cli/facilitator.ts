/** The Facilitator a command runs on, from its configuration. */
import type { MetricsSink } from "../chain/metrics.js";
import { settlementAccount } from "../chain/secp256k1.js";
import { Facilitator } from "../facilitator.js";
import type { CliConfig } from "./config.js";
import { checkDevnetJournal } from "./devnet-marker.js";
import { UsageError } from "./errors.js";
import { WatchedJournal } from "./watched-journal.js";

/**
 * With `signing`, the settlement keys and the journal file are loaded too (verify needs neither).
 * A `server` keeps running after it answers, so it may watch submitted settlements land.
 */
export async function facilitatorFrom(
  config: CliConfig,
  signing: boolean,
  options: { server?: boolean; metrics?: MetricsSink | undefined } = {},
): Promise<Facilitator> {
  const rpc = {
    rpcUrls: config.rpcUrls,
    useDefaultRpcs: config.publicRpcs,
    erc6492Factories: config.erc6492Factories,
    metrics: options.metrics,
  };
  if (!signing) return new Facilitator(rpc);
  const keys = config.loadPrivateKeys();
  let journal: WatchedJournal;
  try {
    journal = new WatchedJournal(config.journalPath);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unusable";
    throw new UsageError(`cannot open the settlement journal ${config.journalPath} (${code})`);
  }
  const facilitator = new Facilitator({
    ...rpc,
    signers: keys.map((key) => settlementAccount(key)),
    journal,
    confirmTimeoutMs: config.confirmTimeoutMs,
    confirmations: config.confirmations,
    payerRevertLimit: config.payerRevertLimit,
    payerRevertWindowMs: config.payerRevertWindowMs,
    maxFeeWei: config.maxFeeWei,
    maxFeeWeiByChain: config.maxFeeWeiByChain,
    replaceAfterMs: config.replaceAfterMs,
    watchSubmitted: options.server === true,
  });
  await checkDevnetJournal(config.journalPath, facilitator);
  return facilitator;
}
