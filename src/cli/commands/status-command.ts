/** `facilitator status`'s options; the work loads only when the command runs. */
import { Command } from "commander";
import { withChainOptions, withSettlementOptions } from "../options.js";

export const statusCommand = withChainOptions(
  withSettlementOptions(new Command("status"))
    .description(
      "what we know of one settlement: what the journal or store wrote down (sent, landed, answered, failed), which key and run sent it, and what the chain says now",
    )
    .argument(
      "[file]",
      "the payment request (a file, or - for stdin); or use --transaction or --id",
    )
    .option("--transaction <hash>", "the settlement's transaction hash (a Solana signature too)")
    .option("--id <payment-identifier>", "the payment-identifier the payment carried"),
)
  .addHelpText(
    "after",
    `
One JSON document on stdout. Nothing is sent. A Solana payment is asked for by its transaction's
signature (--transaction): its key is made when it is settled.
Exit status: 0 found, 1 not found, 2 a usage or configuration error, 3 the store or chain could
not be reached.`,
  )
  .action(async (file, flags) => {
    const { runStatus } = await import("./status.js");
    process.exitCode = await runStatus(file, flags);
  });
