/** Options several commands share; flags and help come from settings.ts. */
import { type Command, Option } from "commander";
import { helpLine, type Setting } from "./setting-rows.js";
import { SETTINGS } from "./settings.js";

export const collect = (value: string, previous: string[] = []) => [...previous, value];

type SettingName = keyof typeof SETTINGS;

/** The flag of a setting of settings.ts, with its help line (default and environment variable). */
function settingOption(row: Setting): Option {
  if (!row.flag) throw new Error(`a setting without a flag: ${row.env ?? row.key}`);
  const option = new Option(row.flag, helpLine(row));
  return row.kind !== "key" && row.repeatable ? option.argParser(collect) : option;
}

/** `command` with the flags of the settings named, in that order. */
export function withSettings(command: Command, ...names: readonly SettingName[]): Command {
  for (const name of names) command.addOption(settingOption(SETTINGS[name]));
  return command;
}

/** The Solana fee payer options a command takes: key and fee cap, key only (status), or none. */
const FEE_PAYER_SETTINGS = {
  "key and fee cap": [
    "svmFeePayers",
    "svmMaxFeeLamports",
    "svmSmartWallets",
    "svmSmartWalletPrograms",
    "svmSmartWalletMaxComputeUnits",
    "svmSmartWalletMaxPriorityFee",
  ],
  "key only": ["svmFeePayers"],
  none: [],
} as const satisfies Record<string, readonly SettingName[]>;

/** How every command finds its chains, and the Solana fee payer options it uses. */
export function withChainOptions(
  command: Command,
  feePayer: keyof typeof FEE_PAYER_SETTINGS = "key and fee cap",
): Command {
  const chains = ["rpcUrls", "publicRpcs", "rpcBatchLimit"] as const;
  return withSettings(command, ...chains, ...FEE_PAYER_SETTINGS[feePayer], "config");
}

/** The options of every command that settles: keys, receipt wait, journal, fee cap. */
export function withSettlementOptions(command: Command): Command {
  return withSettings(
    command,
    "privateKeys",
    "receiverAuthorizerKey",
    "claimBatchRows",
    "confirmTimeout",
    "journal",
    "store",
    "maxFee",
    "replaceAfter",
    "confirmations",
  );
}
