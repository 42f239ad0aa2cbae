/** `facilitator devnet`'s options; anvil and the contracts load only when the command runs. */
import { Command } from "commander";
import { runLoaded } from "../../io/errors.js";
import { afterHelp } from "../../io/help-layout.js";

const DEVNET_HELP = `
Example:
  facilitator devnet            # then, in another terminal:
  source /tmp/facilitator-devnet-XXXX/devnet.env
  facilitator pay --amount 0.01 | facilitator settle -
  facilitator devnet --svm      # anvil and a Solana cluster beside it:
                                # request-svm.json is a Solana payment`;

export const devnetCommand = new Command("devnet")
  .description("run a local chain with test tokens and funded accounts, until Ctrl-C")
  .option("--port <port>", "RPC port (default 8545; a free port, said out loud, if 8545 is taken)")
  .option(
    "--chain-id <id>",
    "chain id (84532 mimics Base Sepolia for v1 base-sepolia payloads)",
    "31337",
  )
  .option(
    "--dir <dir>",
    "keep the key, journal and request files here (default: a temporary directory removed on exit)",
  )
  .option("--json", "print the devnet's details as one JSON line on stdout")
  .option("--demo", "once up, verify and settle one example payment and show the answers")
  .option("--svm", "also run a local Solana cluster (answering as Solana devnet) beside anvil")
  .option("--svm-only", "run the local Solana cluster alone, without anvil")
  .option(
    "--svm-port <port>",
    "Solana RPC port (default 8899; a free port, said out loud, if 8899 is taken; 0 = any)",
  )
  .addHelpText("after", afterHelp(DEVNET_HELP))
  .action(runLoaded(async () => (await import("./devnet.js")).runDevnet));
