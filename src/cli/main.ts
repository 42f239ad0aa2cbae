/**
 * The `facilitator` command line. Each action returns an exit status; this file alone prints
 * usage errors and calls process.exit, once.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from "commander";
import { WAIT_UNTIL, type WaitUntil } from "../protocol/schemas.js";
import { UsageError } from "./errors.js";
import { humanOutput } from "./output.js";
import { type PaymentFlags, runPayment } from "./payment.js";

const collect = (value: string, previous: string[] = []) => [...previous, value];

const RPC_URL_HELP =
  "RPC endpoint, repeatable or comma-separated (env FACILITATOR_RPC_URL); only their chains are served";
const ERC6492_HELP =
  "let undeployed (ERC-6492) wallets of this factory pay, deploying them as they settle; " +
  "repeatable (env FACILITATOR_ERC6492_FACTORIES)";
const PUBLIC_RPCS_HELP =
  "also serve well-known chains that have no --rpc-url through built-in public RPCs " +
  "(env FACILITATOR_PUBLIC_RPCS=1; the default when no RPC is configured)";

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
    )
    .option("--rpc-url <url>", RPC_URL_HELP, collect)
    .option("--public-rpcs", PUBLIC_RPCS_HELP)
    .option("--erc6492-factory <address>", ERC6492_HELP, collect)
    .option("--config <file>", "JSON config file (env FACILITATOR_CONFIG)")
    .option("-q, --quiet", "nothing on stderr; stdout still carries the JSON answer");
  return command;
}

/** The options of every command that settles: keys, receipt wait, journal, fee cap. */
function withSettlementOptions(command: Command): Command {
  return command
    .option(
      "--private-key-file <file>",
      "settlement key file, one key per line for a pool (or env FACILITATOR_PRIVATE_KEY / FACILITATOR_PRIVATE_KEY_FILE)",
    )
    .option(
      "--confirm-timeout <seconds>",
      "how long to wait for the receipt before answering settlement_pending (default 60)",
    )
    .option(
      "--journal <file>",
      "settlement journal (env FACILITATOR_JOURNAL; default ~/.local/state/facilitator/journal.jsonl)",
    )
    .option(
      "--max-fee <amount>",
      "most one settlement may cost in the native token, e.g. 0.002 (env FACILITATOR_MAX_FEE)",
    )
    .option(
      "--replace-after <seconds>",
      "replace a transaction stuck in the mempool this long with a higher fee (default 15)",
    )
    .option(
      "--confirmations <n>",
      "blocks a receipt must be deep before confirmed answers, for chains with deep reorgs (default 1; env FACILITATOR_CONFIRMATIONS)",
    );
}

const verify = paymentCommand("verify")
  .description("check a signed x402 payment against its requirements (no key needed)")
  .addHelpText(
    "after",
    `
Example (against \`facilitator devnet\`, which prints these paths):
  export FACILITATOR_RPC_URL=http://127.0.0.1:8545
  facilitator verify /tmp/facilitator-devnet/request.json
  cat payload.json | facilitator verify - --requirements requirements.json | jq .success

Input: at most 1 MiB (key and config files 64 KiB); a pipe, FIFO or stdin that sends nothing for
FACILITATOR_INPUT_TIMEOUT seconds (default 30) is an error.
Exit status: 0 valid, 1 rejected, 2 bad input or usage, 3 chain or infrastructure failure.`,
  )
  .action(async (file: string | undefined, flags: PaymentFlags) => {
    finish(await runPayment("verify", file, flags));
  });

const settle = withSettlementOptions(paymentCommand("settle"))
  .description("verify, then execute the transfer on chain and print the transaction hash")
  .addOption(
    new Option(
      "--wait-until <level>",
      "simulated: sign and dry-run; submitted: broadcast; confirmed: receipt " +
        "(default: the body's waitUntil, else confirmed)",
    ).argParser(waitUntilOption),
  )
  .addHelpText(
    "after",
    `
Example (against \`facilitator devnet\`, which prints these paths):
  export FACILITATOR_RPC_URL=http://127.0.0.1:8545
  facilitator settle /tmp/facilitator-devnet/request.json \\
    --private-key-file /tmp/facilitator-devnet/facilitator.key --wait-until confirmed

The key is never accepted as a flag value and never printed.
Input: at most 1 MiB (key and config files 64 KiB); a pipe, FIFO or stdin that sends nothing for
FACILITATOR_INPUT_TIMEOUT seconds (default 30) is an error.
Exit status: 0 settled, 1 rejected, 2 bad input or usage, 3 chain or infrastructure failure
(3 with settlement_pending means: broadcast, not yet confirmed; the hash is in the answer).`,
  )
  .action(async (file: string | undefined, flags: PaymentFlags) => {
    const out = humanOutput(flags.quiet);
    const spin =
      out.enabled && (flags.waitUntil ?? "confirmed") === "confirmed"
        ? async () => {
            const { default: ora } = await import("ora");
            return ora({ text: "settling…", stream: process.stderr }).start();
          }
        : undefined;
    const spinner = spin ? await spin() : undefined;
    const code = await runPayment("settle", file, flags, () => () => spinner?.stop());
    finish(code);
  });

const devnet = new Command("devnet")
  .description("run a local chain with a test USDC and funded accounts, until Ctrl-C")
  .option("--port <port>", "RPC port (default 8545; a free port if 8545 is taken)")
  .option(
    "--chain-id <id>",
    "chain id (84532 mimics Base Sepolia for v1 base-sepolia payloads)",
    "31337",
  )
  .option("--dir <dir>", "where to write the key file and the signed request files")
  .option("--json", "print the devnet's details as one JSON line on stdout")
  .option("--demo", "once up, verify and settle one example payment and show the answers")
  .addHelpText(
    "after",
    `
Example:
  facilitator devnet            # then, in another terminal, the commands it prints`,
  )
  .action(async (flags) => {
    const { runDevnet } = await import("./commands/devnet.js");
    finish(await runDevnet(flags));
  });

const serve = withSettlementOptions(new Command("serve"))
  .description("serve /verify, /settle, /supported, /health and /llms.txt over HTTP")
  .option("--host <host>", "address to bind (default 127.0.0.1; 0.0.0.0 exposes it to the network)")
  .option("--port <port>", "port (default 4020)")
  .option(
    "--api-key-file <file>",
    "require Authorization: Bearer <key> on /verify and /settle (or env FACILITATOR_API_KEY)",
  )
  .option(
    "--allowed-host <name>",
    "without an API key, also answer requests for this Host (repeatable; *.example.com for a domain)",
    collect,
  )
  .option("--body-limit <bytes>", "largest accepted request body (default 65536)")
  .option(
    "--max-connections <n>",
    "connections served at once; more are answered 503 overloaded (default 512)",
  )
  .option(
    "--max-inflight-bytes <bytes>",
    "request-body bytes buffered across requests in flight; past it 503 overloaded (default 8388608)",
  )
  .option(
    "--max-heap <MiB>",
    "heap of the serving thread; if it runs out, the server restarts (default 96)",
  )
  .option("--rpc-url <url>", RPC_URL_HELP, collect)
  .option("--public-rpcs", PUBLIC_RPCS_HELP)
  .option("--erc6492-factory <address>", ERC6492_HELP, collect)
  .option("--config <file>", "JSON config file (env FACILITATOR_CONFIG)")
  .option("-q, --quiet", "no banner and no request log on stderr")
  .addHelpText(
    "after",
    `
Example (against \`facilitator devnet\`):
  FACILITATOR_RPC_URL=http://127.0.0.1:8545 facilitator serve --private-key-file /tmp/facilitator-devnet/facilitator.key
  curl -s localhost:4020/verify -H 'content-type: application/json' -d @/tmp/facilitator-devnet/request.json`,
  )
  .action(async (flags) => {
    const { runServe } = await import("./commands/serve.js");
    finish(await runServe(flags));
  });

function finish(code: number): void {
  process.exitCode = code;
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command("facilitator")
    .description("An x402 payment facilitator: verify and settle signed token payments")
    .version("0.1.0")
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(text) })
    .addCommand(verify)
    .addCommand(settle)
    .addCommand(serve)
    .addCommand(devnet);
  for (const command of program.commands) command.exitOverride();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      const ok =
        error.code === "commander.helpDisplayed" ||
        error.code === "commander.version" ||
        error.code === "commander.help";
      return ok ? 0 : 2;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`facilitator: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`facilitator: unexpected error: ${(error as Error).message ?? error}\n`);
    return 3;
  }
}
