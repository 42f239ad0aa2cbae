/** `facilitator doctor`'s options; the checks load only when the command runs. */
import { Command } from "commander";
import { runLoaded } from "../../io/errors.js";
import { afterHelp } from "../../io/help-layout.js";
import { withChainOptions, withSettings, withSettlementOptions } from "../../settings/options.js";

const DOCTOR_HELP = `
It reads the same flags, environment and config file as settle and serve, and says what to fix.

Exit status, the worst finding's: 0 all good, 1 warnings, 2 a configuration error (no RPC, a bad
key or config file, an unusable journal), 3 an RPC cannot be reached.`;

// In help's order: settle's flags, the claim batch wait, --json, the deny list, the chain's.
const doctor = withSettings(withSettlementOptions(new Command("doctor")), "claimBatchWait")
  .description(
    "check the configuration: RPCs and the chains they serve, keys and their gas, the journal or store, token support",
  )
  .option("--json", "one JSON document on stdout instead of the report");

export const doctorCommand = withChainOptions(withSettings(doctor, "denyList"))
  .addHelpText("after", afterHelp(DOCTOR_HELP))
  .action(runLoaded(async () => (await import("./doctor.js")).runDoctor));
