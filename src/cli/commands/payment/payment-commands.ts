/** `facilitator verify` and `facilitator settle`: a request file (or stdin) in, one JSON answer out. */
import { Command, InvalidArgumentError, Option } from "commander";
import { WAIT_UNTIL, type WaitUntil } from "../../../protocol/schemas.js";
import { afterHelp, DEVNET_EXAMPLE } from "../../io/help-layout.js";
import { withChainOptions, withSettings, withSettlementOptions } from "../../settings/options.js";
import { SETTINGS } from "../../settings/settings.js";
import { type PaymentFlags, runPayment } from "./payment.js";

const INPUT_NOTE = `Input: at most 1 MiB (key and config files 64 KiB); a pipe, FIFO or stdin that sends nothing for
${SETTINGS.inputTimeout.env} seconds (default ${SETTINGS.inputTimeout.shownDefault}) is an error.`;

const VERIFY_HELP = `
${DEVNET_EXAMPLE}
  facilitator verify /tmp/facilitator-devnet-XXXX/request.json
  facilitator pay --amount 0.01 | facilitator verify -
  cat payload.json | facilitator verify - --requirements reqs.json | jq .success

${INPUT_NOTE}

Exit status: 0 valid, 1 rejected, 2 bad input, usage or configuration (no RPC for the payment's
chain), 3 chain or infrastructure failure, 130 interrupted (Ctrl-C).`;

const SETTLE_HELP = `
${DEVNET_EXAMPLE}
  facilitator settle /tmp/facilitator-devnet-XXXX/request.json
  facilitator pay --amount 0.01 | facilitator settle -
  facilitator settle /tmp/facilitator-devnet-XXXX/request-upto.json \\
    --amount 4200    # upto: charge 4200 atomic units (0.0042 test USDC)

The key is never accepted as a flag value and never printed.

${INPUT_NOTE}

Exit status: 0 settled, 1 rejected, 2 bad input, usage or configuration (no RPC for the payment's
chain, no settlement key), 3 chain or infrastructure failure (3 with settlement_pending means:
broadcast, not yet confirmed; the hash is in the answer), 130 interrupted (Ctrl-C: the answer says
whether anything was broadcast).`;

function waitUntilOption(value: string): WaitUntil {
  if (!WAIT_UNTIL.includes(value as WaitUntil)) {
    throw new InvalidArgumentError(`expected one of ${WAIT_UNTIL.join(", ")}`);
  }
  return value as WaitUntil;
}

function paymentCommand(name: "verify" | "settle"): Command {
  const command = new Command(name)
    .argument(
      "[file]",
      "request JSON ({payload, requirements} or the x402 shape); - or none: stdin",
    )
    .option(
      "--requirements <file>",
      "FILE then holds only the PaymentPayload; requirements come from here",
    );
  const checks = ["erc6492Factories", "denyList", "minAmounts", "builderCode"] as const;
  return withSettings(withChainOptions(command), ...checks)
    .option("-q, --quiet", "nothing on stderr; stdout still carries the JSON answer")
    .action(async (file: string | undefined, flags: PaymentFlags) => {
      process.exitCode = await runPayment(name, file, flags);
    });
}

export const verifyCommand = paymentCommand("verify")
  .description("check a signed x402 payment against its requirements (no key needed)")
  .addHelpText("after", afterHelp(VERIFY_HELP));

export const settleCommand = withSettlementOptions(paymentCommand("settle"))
  .description("verify, then execute the transfer on chain and print the transaction hash")
  .addOption(
    new Option(
      "--wait-until <level>",
      "simulated: sign and dry-run; submitted: broadcast; confirmed: receipt " +
        "(default: the body's waitUntil, else confirmed)",
    ).argParser(waitUntilOption),
  )
  .option(
    "--amount <atomic-units>",
    "upto payments: charge this many of the token's atomic units, a whole number (4200 is 0.0042 of a 6-decimal token; pay --amount is in token units), at most what was signed for; 0 settles nothing",
  )
  .addHelpText("after", afterHelp(SETTLE_HELP));
