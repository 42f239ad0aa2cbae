/** `facilitator status`'s options; the work loads only when the command runs. */
import { Command } from "commander";
import { runLoaded } from "../../io/errors.js";
import { afterHelp, DEVNET_EXAMPLE } from "../../io/help-layout.js";
import { withChainOptions, withSettings } from "../../settings/options.js";

const STATUS_HELP = `
${DEVNET_EXAMPLE}
  facilitator status /tmp/facilitator-devnet-XXXX/request.json
  facilitator status --transaction HASH     # the transactionHash settle printed

One JSON document on stdout; with stderr a terminal, one line for people there. Nothing is sent.
A Solana payment's settlement is named by its fee payer's signature: status finds it from the
payment when the fee payer's key is configured (as devnet.env does), else by --transaction.

Exit status: 0 found, 1 not found, 2 a usage or configuration error, 3 the store or chain could
not be reached.`;

// status sends nothing, so no settle flags; the Solana fee payer's key names Solana settlements.
export const statusCommand = withChainOptions(
  withSettings(new Command("status"), "journal", "store")
    .description(
      "what we know of one settlement: what the journal or store wrote down (sent, landed, answered, failed), which key and run sent it, and what the chain says now",
    )
    .argument(
      "[file]",
      "the payment request (a file, or - for stdin); or use --transaction or --id",
    )
    .option(
      "--transaction <hash>",
      "the settlement's transaction hash (0x and 64 hex digits), or a Solana transaction signature",
    )
    .option("--id <payment-identifier>", "the payment-identifier the payment carried")
    .option("-q, --quiet", "nothing on stderr; stdout still carries the JSON answer"),
  "key only",
)
  .addHelpText("after", afterHelp(STATUS_HELP))
  .action(runLoaded(async () => (await import("./status.js")).runStatus));
