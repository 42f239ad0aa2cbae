/** The `facilitator` command line; bin/facilitator.js exits with what main() returns. */
import { Command, CommanderError } from "commander";
import type { KeyRow } from "../core/scheme-settings.js";
import type { ErrorCode } from "../protocol/errors.js";
import { firstLine } from "../protocol/words.js";
import { devnetCommand } from "./commands/devnet/devnet-command.js";
import { doctorCommand } from "./commands/doctor/doctor-command.js";
import { payCommand } from "./commands/pay/pay-command.js";
import { settleCommand, verifyCommand } from "./commands/payment/payment-commands.js";
import { reconcileCommand } from "./commands/reconcile/reconcile-command.js";
import { serveCommand } from "./commands/serve/serve-command.js";
import { statusCommand } from "./commands/status/status-command.js";
import { UsageError } from "./io/errors.js";
import { wrapHelp } from "./io/help-layout.js";
import { printJson } from "./io/output.js";
import { flagName } from "./settings/setting-rows.js";
import { SETTINGS } from "./settings/settings.js";

/** Every line the CLI writes for people about what went wrong starts with this. */
export const PREFIX = "facilitator:";

const HELP_CODES = new Set(["commander.helpDisplayed", "commander.version", "commander.help"]);

/** Where a key comes from instead of a flag's value: its file's flag, or the environment. */
const useInstead = (row: KeyRow) => `use ${flagName(row.flag)} FILE or ${row.env}`;
const NEVER = "keys are never taken on the command line";

/** Flags people try that must never exist, and what to use instead. */
const FLAG_HINTS: Readonly<Record<string, string>> = {
  "--private-key": `${NEVER} (they would land in shell history and ps): ${useInstead(SETTINGS.privateKeys)}`,
  "--key": `${NEVER}: ${useInstead(SETTINGS.privateKeys)}`,
  "--receiver-authorizer-key": `${NEVER}: ${useInstead(SETTINGS.receiverAuthorizerKey)}`,
  "--svm-private-key": `${NEVER}: ${useInstead(SETTINGS.svmFeePayers)}`,
  "--payer-key": `${NEVER}: use --payer-key-file FILE, or --payer N on a devnet`,
  "--api-key": `${NEVER}: ${useInstead(SETTINGS.apiKey)}`,
};

/** commander's "error: unknown option '--x'" as one line in our words, with a hint where one helps. */
function commanderMessage(error: CommanderError, command: string | undefined): string {
  const text = error.message
    .replace(/^error: /, "")
    .replace(/\s*\n\s*/g, " ")
    .trim();
  const flag = /unknown option '([^'=]+)/.exec(text)?.[1];
  // pay's key is the payer's, not a settlement key.
  const hint = flag
    ? command === "pay" && (flag === "--private-key" || flag === "--key")
      ? FLAG_HINTS["--payer-key"]
      : FLAG_HINTS[flag]
    : undefined;
  if (hint) return `unknown option ${flag}: ${hint}`;
  const help = command ? `facilitator ${command} --help` : "facilitator --help";
  return `${text} (see ${help})`;
}

/** A usage error: one line on stderr, and on stdout the one JSON document scripts read. */
async function reportUsage(message: string, code: ErrorCode = "invalid_request"): Promise<2> {
  process.stderr.write(`${PREFIX} ${message}\n`);
  await printJson({ success: false, error: code, message });
  return 2;
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command("facilitator")
    .description("An x402 payment facilitator: verify and settle signed token payments")
    .version("0.1.0")
    .addCommand(verifyCommand)
    .addCommand(settleCommand)
    .addCommand(payCommand)
    .addCommand(serveCommand)
    .addCommand(devnetCommand)
    .addCommand(doctorCommand)
    .addCommand(reconcileCommand)
    .addCommand(statusCommand);
  // Our error text for commander's (one line and the JSON answer); help wrapped to the terminal.
  for (const command of [program, ...program.commands]) {
    wrapHelp(command.exitOverride().configureOutput({ outputError: () => undefined }));
  }
  const commandName = program.commands.find((c) => argv.slice(2).includes(c.name()))?.name();
  if (argv.length <= 2) {
    // No command at all is a usage error, not a success: the help, and the one JSON answer.
    process.stderr.write(program.helpInformation({ error: true }));
    return reportUsage(
      "a command is needed: verify, settle, pay, serve, devnet, doctor, reconcile or status",
    );
  }
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (HELP_CODES.has(error.code)) return 0;
      return reportUsage(commanderMessage(error, commandName));
    }
    if (error instanceof UsageError) return reportUsage(error.message, error.code);
    process.stderr.write(`${PREFIX} unexpected error: ${firstLine(error)} (please report it)\n`);
    return 3;
  }
}
