/** `facilitator reconcile`'s options; the work loads only when the command runs. */
import { Command } from "commander";
import { runLoaded } from "../../io/errors.js";
import { afterHelp } from "../../io/help-layout.js";
import { withChainOptions, withSettings, withSettlementOptions } from "../../settings/options.js";

const RECONCILE_HELP = `
It reads the same journal or store as settle and serve, and prints one JSON document: how many
settlements it followed, counted by outcome (landed, failed, dropped, open, busy, error; zeros
included), and each with its transaction. With stderr a terminal, one line for people there.
A landed one is written down as such: the next settle of that payment answers its success. With
the journal file it waits its turn with the settlement keys, as settle does.

Exit status: 0 nothing left open, 1 some still open (pending on chain, or being settled), 2 a
configuration error, 3 a chain or the store could not be reached.`;

export const reconcileCommand = withChainOptions(
  withSettings(withSettlementOptions(new Command("reconcile")), "retainDays")
    .description(
      "follow every settlement written down and not yet at its end (once): landed, failed or still open; for a cron job, or a CI step after a failed run",
    )
    .option("--idle <seconds>", "only settlements unchanged for this long (default 0: all)")
    .option("-q, --quiet", "nothing on stderr; stdout still carries the JSON answer"),
)
  .addHelpText("after", afterHelp(RECONCILE_HELP))
  .action(runLoaded(async () => (await import("./reconcile.js")).runReconcile));
