/** The one error table: HTTP status, x402 reason (the reference SDK's), summary; see errors.ts. */

export interface ErrorSpec {
  /** HTTP status in the reference dialect. A code only the CLI answers (`cliOnly`) never goes over
   * HTTP; its status only orders it among the failures (499: the client went away). */
  readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 429 | 499 | 500 | 503;
  /** The x402 `invalidReason` / `errorReason` string for this outcome. */
  readonly x402: string;
  /** A one-line explanation, the default `message`. */
  readonly summary: string;
  /** Answered by the CLI only (exit status 130), never by the HTTP service. */
  readonly cliOnly?: true;
}

function row(status: ErrorSpec["status"], x402: string, summary: string): ErrorSpec {
  return { status, x402, summary };
}
/** Most rows: the request is refused for what it asks. */
const badRequest = (x402: string, summary: string) => row(400, x402, summary);
/** A row whose x402 reason is its code (filled in below). */
const own = (status: ErrorSpec["status"], summary: string) => row(status, "", summary);

const TABLE = {
  invalid_request: badRequest(
    "invalid_payload",
    "The request is not valid JSON of the documented shape",
  ),
  unsupported_version: badRequest(
    "invalid_x402_version",
    "This x402 version is not supported (1 and 2 are)",
  ),
  unsupported_scheme: own(400, "This payment scheme is not supported"),
  unsupported_network: badRequest(
    "invalid_network",
    "This network is not served here (no RPC is configured for it)",
  ),
  unsupported_signature: badRequest(
    "eip6492_factory_not_allowed",
    "This kind of signature is not supported",
  ),
  transfer_method_mismatch: badRequest(
    "invalid_exact_evm_asset_transfer_method",
    "requirements.extra.assetTransferMethod names another method than the payload uses",
  ),
  facilitator_mismatch: badRequest(
    "upto_facilitator_mismatch",
    "The payment names another facilitator than this one (an upto witness, a Solana fee payer)",
  ),
  missing_fee_payer: badRequest(
    "invalid_exact_svm_payload_missing_fee_payer",
    "requirements.extra.feePayer must name the Solana fee payer",
  ),
  fee_payer_mismatch: badRequest(
    "invalid_exact_svm_fee_payer_mismatch",
    "The Solana transaction's fee payer is not requirements.extra.feePayer",
  ),
  unexpected_instructions: badRequest(
    "invalid_exact_svm_payload_transaction_instructions_length",
    "The Solana transaction is not laid out as an exact payment (the message says where)",
  ),
  compute_budget_too_high: badRequest(
    "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high",
    "The Solana transaction's compute-unit limit or price is above the cap",
  ),
  fee_payer_in_transfer: badRequest(
    "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
    "The Solana transaction uses this facilitator's fee payer beyond paying the fee",
  ),
  lookup_table_unresolved: badRequest(
    "invalid_exact_svm_smart_wallet_alt_resolution_failed",
    "An address lookup table of the Solana transaction cannot be read (missing, not a table), or it uses more tables or table accounts than the cap",
  ),
  memo_mismatch: badRequest(
    "invalid_exact_svm_payload_memo_mismatch",
    "The Solana transaction's memo differs from requirements.extra.memo",
  ),
  unsupported_transaction_version: own(
    400,
    "The Solana transaction's message version is not taken here (version 0 is, and legacy)",
  ),
  spender_mismatch: badRequest(
    "invalid_permit2_spender",
    "The Permit2 authorization's spender is not the x402 exact Permit2 proxy",
  ),
  scheme_mismatch: badRequest(
    "invalid_exact_evm_scheme",
    "The payload's scheme differs from the requirements' scheme",
  ),
  network_mismatch: badRequest(
    "invalid_exact_evm_network_mismatch",
    "The payload's network differs from the requirements' network",
  ),
  missing_eip712_domain: badRequest(
    "invalid_exact_evm_missing_eip712_domain",
    "requirements.extra must carry the token's EIP-712 name and version",
  ),
  invalid_signature: badRequest(
    "invalid_exact_evm_signature",
    "The signature does not validate for the payer",
  ),
  recipient_mismatch: badRequest(
    "invalid_exact_evm_recipient_mismatch",
    "The authorization pays someone other than requirements.payTo",
  ),
  amount_mismatch: badRequest(
    "invalid_exact_evm_payload_authorization_value_mismatch",
    "The authorized value differs from the required amount",
  ),
  amount_too_small: own(
    400,
    "The payment moves nothing (an amount of 0), or less than this facilitator's minimum for the asset; nothing was sent",
  ),
  asset_mismatch: badRequest(
    "permit2_token_mismatch",
    "The authorization moves a different token than requirements.asset",
  ),
  authorization_expired: badRequest(
    "invalid_exact_evm_payload_authorization_valid_before",
    "The authorization expires in less than 6 seconds or has expired",
  ),
  authorization_not_yet_valid: badRequest(
    "invalid_exact_evm_payload_authorization_valid_after",
    "The authorization is not valid yet",
  ),
  token_name_mismatch: badRequest(
    "invalid_exact_evm_token_name_mismatch",
    "The token's name() differs from requirements.extra.name",
  ),
  token_version_mismatch: badRequest(
    "invalid_exact_evm_token_version_mismatch",
    "The token's version() differs from requirements.extra.version",
  ),
  asset_not_contract: badRequest(
    "asset_not_deployed_contract",
    "requirements.asset has no contract code on this network",
  ),
  eip3009_not_supported: badRequest(
    "invalid_exact_evm_eip3009_not_supported",
    "The token does not implement EIP-3009",
  ),
  nonce_already_used: badRequest(
    "invalid_exact_evm_nonce_already_used",
    "The authorization was already used or cancelled on chain",
  ),
  allowance_required: badRequest(
    "permit2_allowance_required",
    "The payer has not approved Permit2 for this token, and no gas-sponsoring extension does",
  ),
  proxy_not_deployed: badRequest(
    "permit2_proxy_not_deployed",
    "The x402 Permit2 proxy has no code on this network",
  ),
  invalid_extension: badRequest(
    "invalid_eip2612_extension_format",
    "A gas-sponsoring extension of the payment is malformed or does not fit it",
  ),
  insufficient_funds: badRequest(
    "invalid_exact_evm_insufficient_balance",
    "The payer's balance is below the amount",
  ),
  simulation_failed: badRequest(
    "invalid_exact_evm_transaction_simulation_failed",
    "The transfer would revert",
  ),
  channel_mismatch: badRequest(
    "invalid_batch_settlement_evm_channel_id_mismatch",
    "The payment channel's configuration does not match its id or the requirements (receiver, receiver authorizer, token, withdraw delay)",
  ),
  channel_not_found: badRequest(
    "invalid_batch_settlement_evm_channel_not_found",
    "The payment channel holds no deposit",
  ),
  voucher_exceeds_balance: badRequest(
    "invalid_batch_settlement_evm_cumulative_exceeds_balance",
    "The voucher's cumulative amount is more than the channel holds",
  ),
  voucher_already_claimed: badRequest(
    "invalid_batch_settlement_evm_cumulative_below_claimed",
    "The voucher's cumulative amount is not above what was already claimed (a stale or replayed voucher)",
  ),
  nothing_to_settle: badRequest(
    "invalid_batch_settlement_evm_nothing_to_settle",
    "Nothing is claimed and unsettled for this receiver and token (or nothing is left to refund)",
  ),
  receiver_authorizer_unavailable: badRequest(
    "invalid_batch_settlement_evm_authorizer_not_configured",
    "The claim or refund carries no receiver authorizer signature, and this facilitator holds no key for the channel's receiver authorizer",
  ),
  refund_not_authorized: row(
    403,
    "invalid_batch_settlement_evm_refund_not_authorized",
    "The refund asks this facilitator's receiver authorizer to sign, and the caller is not authenticated as the channel's receiver",
  ),
  gas_limit_exceeded: badRequest(
    "invalid_exact_evm_transaction_simulation_failed",
    "Settling would take more gas than this facilitator allows for the method (a hostile or unusual token); nothing was sent",
  ),
  asset_not_allowed: badRequest(
    "invalid_exact_evm_asset_not_allowed",
    "This facilitator settles only the assets its operator listed for this network",
  ),
  asset_throttled: own(
    429,
    "Settlements of this token wasted our gas (reverted, ran out of gas, or moved nothing); it is refused for a while",
  ),
  fee_cap_exceeded: row(
    503,
    "unexpected_error",
    "The settlement would cost more than the fee cap for this network at today's gas price; nothing was sent",
  ),
  fee_payer_unfunded: row(
    503,
    "invalid_exact_svm_transaction_simulation_failed",
    "This facilitator's Solana fee payer lacks the SOL to pay the fee (its operator must fund it)",
  ),
  settlement_failed: badRequest(
    "invalid_exact_evm_transaction_failed",
    "The settlement transaction failed",
  ),
  settlement_in_progress: own(409, "This authorization is being settled right now"),
  key_in_use: own(
    409,
    "The settlement key (or journal) is in use by another process: a running serve, or a replica on the same store; nothing was sent",
  ),
  duplicate_settlement: own(
    409,
    "This transaction was already settled; a replay of it is never paid or answered again",
  ),
  idempotency_conflict: own(
    409,
    "This payment-identifier was already used for a different payment request",
  ),
  address_denied: own(
    403,
    "A payer or payee of the payment is on this facilitator's deny list; nothing was sent",
  ),
  rate_limited: own(
    429,
    "This caller (API key or client address) is over its rate of requests; retry later",
  ),
  payer_throttled: own(
    429,
    "This payer's recent settlements reverted on chain, or the network's budget of wasted gas is spent and the payer wasted as many settlements as it landed with us (or twice the budget is spent), or the payer or payee is over its rate of settlements, or the gas for its approval was sent to it already and no approval of its has landed since (or sending it would pass the budget); it is refused for a while",
  ),
  settlement_pending: own(
    500,
    "The transaction was broadcast but not confirmed in time; retry to reconcile",
  ),
  chain_unavailable: row(503, "unexpected_error", "The RPC for this network cannot be reached"),
  store_unavailable: row(
    503,
    "unexpected_error",
    "The settlement store cannot be reached; nothing was sent",
  ),
  internal_error: row(500, "unexpected_error", "Unexpected internal error"),
  unauthorized: own(401, "A valid API key is required"),
  payload_too_large: row(413, "invalid_payload", "The request body is over the size limit"),
  untrusted_host: own(403, "The Host header names a host this server does not answer for"),
  overloaded: own(
    503,
    "Too many connections or request bytes in flight (429 on /supported), or the settlement key is too far behind or blocked by a transaction the node does not mine; nothing was sent, retry later",
  ),
  interrupted: {
    status: 499,
    x402: "interrupted",
    summary: "Interrupted (Ctrl-C) before anything was broadcast: nothing was sent",
    cliOnly: true,
  },
  not_found: own(404, "No such endpoint"),
  method_not_allowed: own(405, "This endpoint does not accept that method"),
} satisfies Record<string, ErrorSpec>;

export const ERRORS = Object.fromEntries(
  Object.entries(TABLE).map(([code, spec]) => [code, { ...spec, x402: spec.x402 || code }]),
) as typeof TABLE;

export type ErrorCode = keyof typeof ERRORS;
