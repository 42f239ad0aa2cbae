/**
 * Options several commands share: where the chains are, the config file, the settlement keys.
 * Each setting's flag and help line come from settings.ts, which names its environment variable.
 */
import { type Command, Option } from "commander";
import { helpLine, type Setting } from "./setting-rows.js";
import { SETTINGS } from "./settings.js";

export const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The flag of a setting of settings.ts, with its help line (default and environment variable). */
export function settingOption(row: Setting): Option {
  if (!row.flag) throw new Error(`a setting without a flag: ${row.env ?? row.key}`);
  const option = new Option(row.flag, helpLine(row));
  return row.kind !== "key" && row.repeatable ? option.argParser(collect) : option;
}

/** `command` with the flags of `rows`, in that order. */
export function withSettings(command: Command, ...rows: readonly Setting[]): Command {
  for (const row of rows) command.addOption(settingOption(row));
  return command;
}

/**
 * What of the Solana fee payer a command uses: its key and fee cap (verify names it, settle signs
 * with it), its key only (status: it names a Solana payment's settlement), or nothing (pay).
 */
export type FeePayerUse = "key and fee cap" | "key only" | "none";

/**
 * --rpc-url, --public-rpcs, --rpc-batch-limit, --config: how every command finds its chains; and the Solana fee
 * payer's --svm-private-key-file and --svm-max-fee-lamports, as far as the command uses them.
 */
export function withChainOptions(
  command: Command,
  feePayer: FeePayerUse = "key and fee cap",
): Command {
  return withSettings(
    command,
    SETTINGS.rpcUrls,
    SETTINGS.publicRpcs,
    SETTINGS.rpcBatchLimit,
    ...(feePayer !== "none" ? [SETTINGS.svmFeePayers] : []),
    ...(feePayer === "key and fee cap"
      ? [
          SETTINGS.svmMaxFeeLamports,
          SETTINGS.svmSmartWallets,
          SETTINGS.svmSmartWalletPrograms,
          SETTINGS.svmSmartWalletMaxComputeUnits,
          SETTINGS.svmSmartWalletMaxPriorityFee,
        ]
      : []),
    SETTINGS.config,
  );
}

/** --journal, --store: where settlements are written down (status reads them too). */
export function withStoreOptions(command: Command): Command {
  return withSettings(command, SETTINGS.journal, SETTINGS.store);
}

/** The options of every command that settles: keys, receipt wait, journal, fee cap. */
export function withSettlementOptions(command: Command): Command {
  const keysAndWait = withSettings(
    command,
    SETTINGS.privateKeys,
    SETTINGS.receiverAuthorizerKey,
    SETTINGS.claimBatchRows,
    SETTINGS.confirmTimeout,
  );
  return withSettings(
    withStoreOptions(keysAndWait),
    SETTINGS.maxFee,
    SETTINGS.replaceAfter,
    SETTINGS.confirmations,
  );
}

/** serve's (and doctor's, which reads what serve would): a one-shot settle has no claims to wait for. */
export function withClaimBatchWait(command: Command): Command {
  return withSettings(command, SETTINGS.claimBatchWait);
}
