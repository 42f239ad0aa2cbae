/** Options several commands share; flags and help come from settings.ts. */
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
function withSettings(command: Command, ...rows: readonly Setting[]): Command {
  for (const row of rows) command.addOption(settingOption(row));
  return command;
}

/** The Solana fee payer options a command takes: key and fee cap, key only (status), or none. */
export type FeePayerUse = "key and fee cap" | "key only" | "none";

/** How every command finds its chains, and the Solana fee payer options it uses. */
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
  return withSettings(
    command,
    SETTINGS.privateKeys,
    SETTINGS.receiverAuthorizerKey,
    SETTINGS.claimBatchRows,
    SETTINGS.confirmTimeout,
    SETTINGS.journal,
    SETTINGS.store,
    SETTINGS.maxFee,
    SETTINGS.replaceAfter,
    SETTINGS.confirmations,
  );
}

/** serve's (and doctor's, which reads what serve would): a one-shot settle has no claims to wait for. */
export function withClaimBatchWait(command: Command): Command {
  return withSettings(command, SETTINGS.claimBatchWait);
}
