/** `facilitator serve`'s options; the server itself loads only when the command runs. */
import { Command } from "commander";
import { runLoaded } from "../../io/errors.js";
import { afterHelp } from "../../io/help-layout.js";
import {
  collect,
  withChainOptions,
  withSettings,
  withSettlementOptions,
} from "../../settings/options.js";

const SERVE_HELP = `
Example (against \`facilitator devnet\`):
  source /tmp/facilitator-devnet-XXXX/devnet.env
  facilitator serve
  curl -s localhost:4020/verify -H 'content-type: application/json' \\
    -d @/tmp/facilitator-devnet-XXXX/request.json

Ctrl-C (or SIGTERM) refuses new requests (503) and lets those in flight answer, for at most
--shutdown-timeout; a settle still waiting then is answered settlement_pending: it is in the
journal and a retry follows it. A second Ctrl-C stops at once (exit 130).`;

// Built in the order help lists the flags.
const serve = withSettlementOptions(new Command("serve"));
withSettings(serve, "claimBatchWait")
  .description(
    "serve /verify, /settle, /accepts, /supported, /health, /readyz, /metrics and /llms.txt over HTTP",
  )
  .option("--host <host>", "address to bind (default 127.0.0.1; 0.0.0.0 exposes it to the network)")
  .option("--port <port>", "port (default 4020)");
withSettings(serve, "retainDays", "apiKey", "apiKeysFile")
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
    "--max-connections-per-client <n>",
    "connections one client address may have served at once (default half of --max-connections; behind a reverse proxy, set it to --max-connections)",
  )
  .option(
    "--max-inflight-bytes <bytes>",
    "request-body bytes buffered across requests in flight; past it 503 overloaded (default 8388608)",
  );
withSettings(serve, "minSignerBalance").option(
  "--max-heap <MiB>",
  "heap of the serving worker; if it runs out, the server restarts (default 96)",
);
withChainOptions(serve);

export const serveCommand = withSettings(
  serve,
  "erc6492Factories",
  "denyList",
  "builderCode",
  "ratePerClient",
  "minAmounts",
  "ratePerPayer",
  "shutdownTimeout",
)
  .option("-q, --quiet", "no banner and no request log on stderr")
  .addHelpText("after", afterHelp(SERVE_HELP))
  .action(runLoaded(async () => (await import("./serve.js")).runServe));
