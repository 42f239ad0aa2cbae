/** GET /llms.txt: a plain-text index of the service for people and agents. */
import { ERRORS, type ErrorCode, type ErrorSpec } from "../protocol/errors.js";

export function llmsTxt(): string {
  const codes = (Object.keys(ERRORS) as ErrorCode[])
    .map((code) => {
      const spec: ErrorSpec = ERRORS[code];
      const status = spec.cliOnly ? "CLI only, exit 130" : String(spec.status);
      return `- ${code} (${status}; x402: ${spec.x402}): ${spec.summary}`;
    })
    .join("\n");
  return `# facilitator

> An x402 payment facilitator: verifies signed payments (the "exact" scheme on EVM chains: EIP-3009
> transferWithAuthorization, x402 v1 and v2; Permit2 through the x402 exact proxy, x402 v2, with
> the eip2612GasSponsoring extension; the "upto" scheme through the x402 upto proxy; "exact" on
> Solana, x402 v1 and v2, our fee payer signing and paying the fee) and settles them on chain.

## Endpoints

- POST /verify: does this signed payment satisfy these requirements?
  Reference dialect: {"payload": PaymentPayload, "requirements": PaymentRequirements}
    → 200 {"success": true, "payer"} | 400 {"success": false, "error", "message"}
  x402 dialect: {"x402Version", "paymentPayload", "paymentRequirements"}
    → 200 {"isValid", "invalidReason"?, "invalidMessage"?, "payer"}
- POST /settle: verify, then execute the transfer on chain.
  Reference dialect: {"payload", "requirements", "waitUntil"?: "simulated" | "submitted" | "confirmed"}
    → 200 {"success": true, "transactionHash"} | 400/500/503 {"success": false, "error", "message", "transactionHash"?}
  x402 dialect → 200 {"success", "errorReason"?, "errorMessage"?, "transaction", "network", "payer"}
  With paymentPayload.extensions["payment-identifier"].info.id (16-128 of A-Z a-z 0-9 _ -): the
  same id and request answer the first success again (from any replica on a shared store); the
  same id with another request is 409 idempotency_conflict. See docs/settling-safely.md#exactly-once.
- POST /accepts: Faremeter's facilitator call. {"x402Version": 2, "resource", "accepts": [PaymentRequirements]}
    → 200 {"x402Version": 2, "resource", "accepts"}: the offered requirements this facilitator can
    settle (exact, a network served here), with the token's EIP-712 name and version filled into
    extra and maxTimeoutSeconds (default 300); on Solana (with a fee payer key) extra.feePayer is
    ours, and an offer naming another fee payer is left out; the others are left out.
- GET /supported: the kinds served ({"kinds", "extensions", "signers"}), in the x402 shape:
  exactly the networks /verify and /settle accept. With any RPC configured, only their chains;
  every other network is unsupported_network. See docs/configuration.md#networks-served.
- GET /health: liveness: whether each configured RPC answers (200 ok, 503 degraded).
- GET /readyz: readiness: 200 {"ready": true, ...} when every configured RPC answers, the store
  answers, every signer holds at least the configured native balance on each configured chain and
  every Solana fee payer 0.001 SOL; else 503 {"ready": false, "failed": ["rpc" | "store" |
  "signer_balance" | "fee_payer_balance"], ...}.
- GET /metrics: Prometheus text format (facilitator_requests_total{op,network,outcome},
  facilitator_request_seconds, transactions sent/reverted/replaced, gas spent in wei, settles in
  flight, signer balances, RPC errors by endpoint, store latency; Solana transactions by outcome,
  fees in lamports, fee payer balances, wasted gas and its budget). See
  docs/serve.md#metrics-and-readiness.
- GET /settlements?transaction=<hash> (or ?id=<payment-identifier>): what is known of one
  settlement: its state (broadcast, answered, landed, failed, dropped), transactions,
  the key and run that sent it, and the chain's word now (mined, failed, pending). 404 if none;
  400 invalid_request for a transaction that is neither an EVM hash (0x and 64 hex digits, any
  case) nor a Solana signature (base58). Off (404 not_found) on a server listening beyond
  loopback without an API key.
- GET /llms.txt: this file.
- GET /discovery/resources?type&payTo&scheme&network&extensions&limit&offset: the bazaar catalogue
  (what was paid for through us, settled, and declared extensions.bazaar)
    → 200 {"x402Version": 2, "items", "pagination": {"limit", "offset", "total"}, "unappliedFilters"?}
  GET /discovery/search?query&(the same filters)&limit&cursor
    → 200 {"x402Version": 2, "resources", "partialResults", "pagination": {"limit", "cursor"}}
  A malformed filter is 400 invalid_request. Verify and settle answers carry the
  EXTENSION-RESPONSES header (base64 JSON: {"bazaar": {"status", "rejectedReason"?, "reason"?}}).
  See docs/discovery.md.

Requests are JSON (Content-Type: application/json), at most 64 KiB unless configured otherwise.
Free-form fields (requirements.extra, paymentPayload.resource and extensions, outputSchema) hold at
most 512 JSON values and 32 levels each, the body 2048 values (invalid_request otherwise).
With an API key configured, /verify, /settle, /accepts, /metrics and /settlements need
"Authorization: Bearer <key>" (/health, /readyz, /supported and /llms.txt stay open); without one,
the Host header must name this server (403 untrusted_host otherwise).
Under load (too many connections or request bytes in flight), or while the server stops: 503
overloaded with Retry-After (429 on /supported); retry after that many seconds. Each named API key has a rate on /verify and
/settle (and, when the operator turns it on, each client address without one): past it, 429
rate_limited with Retry-After. A payer or payee on the operator's deny list: 403 address_denied.

## Error codes

${codes}

## Command line

facilitator verify|settle [FILE|-] (one JSON answer on stdout; exit 0 ok, 1 rejected, 2 usage or
configuration, 3 chain or infrastructure, 130 interrupted), facilitator pay (signs a payment and
prints the request: facilitator pay --amount 0.01 | facilitator settle -), facilitator doctor
[--json], facilitator reconcile (follows every open settlement once; exit 0 none left open, 1 some),
facilitator status --transaction <hash> | --id <id> | <file>, facilitator serve, facilitator
devnet. See docs/cli.md.

## Documentation (docs/, index: docs/README.md)

- A seller's server (@x402/express, @x402/hono) pointed at this service: docs/sellers.md
- Two dialects: docs/cli.md#two-dialects
- waitUntil: docs/cli.md#waituntil
- Errors: docs/errors.md
- Several replicas on one PostgreSQL store: docs/replicas.md
- Limits and restarts: docs/serve.md#limits
- Metrics and readiness: docs/serve.md#metrics-and-readiness
- Configuration: docs/configuration.md
- Command line: docs/cli.md
- Settling safely: docs/settling-safely.md
- How verification works: docs/payment-methods.md#how-verification-works-and-where-we-differ-from-the-reference
- Solana: docs/solana.md
- Not supported yet: README.md#not-supported-yet
`;
}
