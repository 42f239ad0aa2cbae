/**
 * The one error table: every failure the facilitator reports, with its HTTP status, the reason
 * string the x402 dialect carries (the reference SDK's, so x402 resource servers see the same
 * verdicts) and a one-line summary for humans. `errors.ts` re-exports it beside the failure values
 * built on it; the CLI, the HTTP server and both dialects read it through there.
 */

export interface ErrorSpec {
  /**
   * HTTP status in the reference dialect. A code only the CLI answers (`cliOnly`) never goes over
   * HTTP; its status only orders it among the failures (499: the client went away).
   */
  readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 429 | 499 | 500 | 503;
  /** The x402 `invalidReason` / `errorReason` string for this outcome. */
  readonly x402: string;
  /** A one-line explanation, the default `message`. */
  readonly summary: string;
  /** Answered by the CLI only (exit status 130), never by the HTTP service. */
  readonly cliOnly?: true;
}

export const ERRORS = {
  invalid_request: {
    status: 400,
    x402: "invalid_payload",
    summary: "The request is not valid JSON of the documented shape",
  },
  unsupported_version: {
    status: 400,
    x402: "invalid_x402_version",
    summary: "This x402 version is not supported (1 and 2 are)",
  },
  unsupported_scheme: {
    status: 400,
    x402: "unsupported_scheme",
    summary: "This payment scheme is not supported",
  },
  unsupported_network: {
    status: 400,
    x402: "invalid_network",
    summary: "This network is not served here (no RPC is configured for it)",
  },
  unsupported_signature: {
    status: 400,
    x402: "eip6492_factory_not_allowed",
    summary: "This kind of signature is not supported",
  },
  transfer_method_mismatch: {
    status: 400,
    x402: "invalid_exact_evm_asset_transfer_method",
    summary: "requirements.extra.assetTransferMethod names another method than the payload uses",
  },
  facilitator_mismatch: {
    status: 400,
    x402: "upto_facilitator_mismatch",
    summary:
      "The payment names another facilitator than this one (an upto witness, a Solana fee payer)",
  },
  missing_fee_payer: {
    status: 400,
    x402: "invalid_exact_svm_payload_missing_fee_payer",
    summary: "requirements.extra.feePayer must name the Solana fee payer",
  },
  fee_payer_mismatch: {
    status: 400,
    x402: "invalid_exact_svm_fee_payer_mismatch",
    summary: "The Solana transaction's fee payer is not requirements.extra.feePayer",
  },
  unexpected_instructions: {
    status: 400,
    x402: "invalid_exact_svm_payload_transaction_instructions_length",
    summary: "The Solana transaction is not laid out as an exact payment (the message says where)",
  },
  compute_budget_too_high: {
    status: 400,
    x402: "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high",
    summary: "The Solana transaction's compute-unit limit or price is above the cap",
  },
  fee_payer_in_transfer: {
    status: 400,
    x402: "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
    summary: "The Solana transaction uses this facilitator's fee payer beyond paying the fee",
  },
  lookup_table_unresolved: {
    status: 400,
    x402: "invalid_exact_svm_smart_wallet_alt_resolution_failed",
    summary:
      "An address lookup table of the Solana transaction cannot be read (missing, not a table), or it uses more tables or table accounts than the cap",
  },
  memo_mismatch: {
    status: 400,
    x402: "invalid_exact_svm_payload_memo_mismatch",
    summary: "The Solana transaction's memo differs from requirements.extra.memo",
  },
  unsupported_transaction_version: {
    status: 400,
    x402: "unsupported_transaction_version",
    summary:
      "The Solana transaction's message version is not taken here (version 0 is, and legacy)",
  },
  spender_mismatch: {
    status: 400,
    x402: "invalid_permit2_spender",
    summary: "The Permit2 authorization's spender is not the x402 exact Permit2 proxy",
  },
  scheme_mismatch: {
    status: 400,
    x402: "invalid_exact_evm_scheme",
    summary: "The payload's scheme differs from the requirements' scheme",
  },
  network_mismatch: {
    status: 400,
    x402: "invalid_exact_evm_network_mismatch",
    summary: "The payload's network differs from the requirements' network",
  },
  missing_eip712_domain: {
    status: 400,
    x402: "invalid_exact_evm_missing_eip712_domain",
    summary: "requirements.extra must carry the token's EIP-712 name and version",
  },
  invalid_signature: {
    status: 400,
    x402: "invalid_exact_evm_signature",
    summary: "The signature does not validate for the payer",
  },
  recipient_mismatch: {
    status: 400,
    x402: "invalid_exact_evm_recipient_mismatch",
    summary: "The authorization pays someone other than requirements.payTo",
  },
  amount_mismatch: {
    status: 400,
    x402: "invalid_exact_evm_payload_authorization_value_mismatch",
    summary: "The authorized value differs from the required amount",
  },
  amount_too_small: {
    status: 400,
    x402: "amount_too_small",
    summary:
      "The payment moves nothing (an amount of 0), or less than this facilitator's minimum for the asset; nothing was sent",
  },
  asset_mismatch: {
    status: 400,
    x402: "permit2_token_mismatch",
    summary: "The authorization moves a different token than requirements.asset",
  },
  authorization_expired: {
    status: 400,
    x402: "invalid_exact_evm_payload_authorization_valid_before",
    summary: "The authorization expires in less than 6 seconds or has expired",
  },
  authorization_not_yet_valid: {
    status: 400,
    x402: "invalid_exact_evm_payload_authorization_valid_after",
    summary: "The authorization is not valid yet",
  },
  token_name_mismatch: {
    status: 400,
    x402: "invalid_exact_evm_token_name_mismatch",
    summary: "The token's name() differs from requirements.extra.name",
  },
  token_version_mismatch: {
    status: 400,
    x402: "invalid_exact_evm_token_version_mismatch",
    summary: "The token's version() differs from requirements.extra.version",
  },
  asset_not_contract: {
    status: 400,
    x402: "asset_not_deployed_contract",
    summary: "requirements.asset has no contract code on this network",
  },
  eip3009_not_supported: {
    status: 400,
    x402: "invalid_exact_evm_eip3009_not_supported",
    summary: "The token does not implement EIP-3009",
  },
  nonce_already_used: {
    status: 400,
    x402: "invalid_exact_evm_nonce_already_used",
    summary: "The authorization was already used or cancelled on chain",
  },
  allowance_required: {
    status: 400,
    x402: "permit2_allowance_required",
    summary:
      "The payer has not approved Permit2 for this token, and no gas-sponsoring extension does",
  },
  proxy_not_deployed: {
    status: 400,
    x402: "permit2_proxy_not_deployed",
    summary: "The x402 Permit2 proxy has no code on this network",
  },
  invalid_extension: {
    status: 400,
    x402: "invalid_eip2612_extension_format",
    summary: "A gas-sponsoring extension of the payment is malformed or does not fit it",
  },
  insufficient_funds: {
    status: 400,
    x402: "invalid_exact_evm_insufficient_balance",
    summary: "The payer's balance is below the amount",
  },
  simulation_failed: {
    status: 400,
    x402: "invalid_exact_evm_transaction_simulation_failed",
    summary: "The transfer would revert",
  },
  channel_mismatch: {
    status: 400,
    x402: "invalid_batch_settlement_evm_channel_id_mismatch",
    summary:
      "The payment channel's configuration does not match its id or the requirements (receiver, receiver authorizer, token, withdraw delay)",
  },
  channel_not_found: {
    status: 400,
    x402: "invalid_batch_settlement_evm_channel_not_found",
    summary: "The payment channel holds no deposit",
  },
  voucher_exceeds_balance: {
    status: 400,
    x402: "invalid_batch_settlement_evm_cumulative_exceeds_balance",
    summary: "The voucher's cumulative amount is more than the channel holds",
  },
  voucher_already_claimed: {
    status: 400,
    x402: "invalid_batch_settlement_evm_cumulative_below_claimed",
    summary:
      "The voucher's cumulative amount is not above what was already claimed (a stale or replayed voucher)",
  },
  nothing_to_settle: {
    status: 400,
    x402: "invalid_batch_settlement_evm_nothing_to_settle",
    summary:
      "Nothing is claimed and unsettled for this receiver and token (or nothing is left to refund)",
  },
  receiver_authorizer_unavailable: {
    status: 400,
    x402: "invalid_batch_settlement_evm_authorizer_not_configured",
    summary:
      "The claim or refund carries no receiver authorizer signature, and this facilitator holds no key for the channel's receiver authorizer",
  },
  refund_not_authorized: {
    status: 403,
    x402: "invalid_batch_settlement_evm_refund_not_authorized",
    summary:
      "The refund asks this facilitator's receiver authorizer to sign, and the caller is not authenticated as the channel's receiver",
  },
  gas_limit_exceeded: {
    status: 400,
    x402: "invalid_exact_evm_transaction_simulation_failed",
    summary:
      "Settling would take more gas than this facilitator allows for the method (a hostile or unusual token); nothing was sent",
  },
  asset_not_allowed: {
    status: 400,
    x402: "invalid_exact_evm_asset_not_allowed",
    summary: "This facilitator settles only the assets its operator listed for this network",
  },
  asset_throttled: {
    status: 429,
    x402: "asset_throttled",
    summary:
      "Settlements of this token wasted our gas (reverted, ran out of gas, or moved nothing); it is refused for a while",
  },
  fee_cap_exceeded: {
    status: 503,
    x402: "unexpected_error",
    summary:
      "The settlement would cost more than the fee cap for this network at today's gas price; nothing was sent",
  },
  fee_payer_unfunded: {
    status: 503,
    x402: "invalid_exact_svm_transaction_simulation_failed",
    summary:
      "This facilitator's Solana fee payer lacks the SOL to pay the fee (its operator must fund it)",
  },
  settlement_failed: {
    status: 400,
    x402: "invalid_exact_evm_transaction_failed",
    summary: "The settlement transaction failed",
  },
  settlement_in_progress: {
    status: 409,
    x402: "settlement_in_progress",
    summary: "This authorization is being settled right now",
  },
  key_in_use: {
    status: 409,
    x402: "key_in_use",
    summary:
      "The settlement key (or journal) is in use by another process: a running serve, or a replica on the same store; nothing was sent",
  },
  duplicate_settlement: {
    status: 409,
    x402: "duplicate_settlement",
    summary: "This transaction was already settled; a replay of it is never paid or answered again",
  },
  idempotency_conflict: {
    status: 409,
    x402: "idempotency_conflict",
    summary: "This payment-identifier was already used for a different payment request",
  },
  address_denied: {
    status: 403,
    x402: "address_denied",
    summary: "A payer or payee of the payment is on this facilitator's deny list; nothing was sent",
  },
  rate_limited: {
    status: 429,
    x402: "rate_limited",
    summary: "This caller (API key or client address) is over its rate of requests; retry later",
  },
  payer_throttled: {
    status: 429,
    x402: "payer_throttled",
    summary:
      "This payer's recent settlements reverted on chain, or the network's budget of wasted gas is spent and the payer wasted as many settlements as it landed with us (or twice the budget is spent), or the payer or payee is over its rate of settlements, or the gas for its approval was sent to it already and no approval of its has landed since (or sending it would pass the budget); it is refused for a while",
  },
  settlement_pending: {
    status: 500,
    x402: "settlement_pending",
    summary: "The transaction was broadcast but not confirmed in time; retry to reconcile",
  },
  chain_unavailable: {
    status: 503,
    x402: "unexpected_error",
    summary: "The RPC for this network cannot be reached",
  },
  store_unavailable: {
    status: 503,
    x402: "unexpected_error",
    summary: "The settlement store cannot be reached; nothing was sent",
  },
  internal_error: {
    status: 500,
    x402: "unexpected_error",
    summary: "Unexpected internal error",
  },
  unauthorized: {
    status: 401,
    x402: "unauthorized",
    summary: "A valid API key is required",
  },
  payload_too_large: {
    status: 413,
    x402: "invalid_payload",
    summary: "The request body is over the size limit",
  },
  untrusted_host: {
    status: 403,
    x402: "untrusted_host",
    summary: "The Host header names a host this server does not answer for",
  },
  overloaded: {
    status: 503,
    x402: "overloaded",
    summary:
      "Too many connections or request bytes in flight (429 on /supported), or the settlement key is too far behind or blocked by a transaction the node does not mine; nothing was sent, retry later",
  },
  interrupted: {
    status: 499,
    x402: "interrupted",
    summary: "Interrupted (Ctrl-C) before anything was broadcast: nothing was sent",
    cliOnly: true,
  },
  not_found: { status: 404, x402: "not_found", summary: "No such endpoint" },
  method_not_allowed: {
    status: 405,
    x402: "method_not_allowed",
    summary: "This endpoint does not accept that method",
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;
