/** The official batch-settlement reasons (`@x402/evm` 2.27) we answer, each with its usual code. */
import { type ErrorCode, type Failure, failure } from "../../protocol/errors.js";

const REASON_CODES = {
  scheme: "scheme_mismatch",
  network_mismatch: "network_mismatch",
  payload_type: "invalid_request",
  channel_id_mismatch: "channel_mismatch",
  receiver_mismatch: "channel_mismatch",
  receiver_authorizer_mismatch: "channel_mismatch",
  token_mismatch: "channel_mismatch",
  withdraw_delay_mismatch: "channel_mismatch",
  withdraw_delay_out_of_range: "channel_mismatch",
  voucher_signature: "invalid_signature",
  channel_not_found: "channel_not_found",
  cumulative_exceeds_balance: "voucher_exceeds_balance",
  cumulative_below_claimed: "voucher_already_claimed",
  cumulative_amount_mismatch: "voucher_already_claimed",
  insufficient_balance: "insufficient_funds",
  missing_eip712_domain: "missing_eip712_domain",
  payload_authorization_valid_before: "authorization_expired",
  payload_authorization_valid_after: "authorization_not_yet_valid",
  receive_authorization_signature: "invalid_signature",
  erc3009_authorization_required: "invalid_request",
  permit2_invalid_spender: "spender_mismatch",
  permit2_amount_mismatch: "amount_mismatch",
  permit2_deadline_expired: "authorization_expired",
  permit2_invalid_signature: "invalid_signature",
  permit2_allowance_required: "allowance_required",
  deposit_simulation_failed: "simulation_failed",
  deposit_transaction_failed: "settlement_failed",
  claim_simulation_failed: "simulation_failed",
  settle_simulation_failed: "simulation_failed",
  nothing_to_settle: "nothing_to_settle",
  refund_no_balance: "nothing_to_settle",
  refund_amount_invalid: "amount_too_small",
  refund_simulation_failed: "simulation_failed",
  authorizer_not_configured: "receiver_authorizer_unavailable",
  authorizer_address_mismatch: "receiver_authorizer_unavailable",
  eip6492_factory_not_allowed: "unsupported_signature",
  eip2612_amount_mismatch: "invalid_extension",
  smart_wallet_deployment_failed: "settlement_failed",
} as const satisfies Record<string, ErrorCode>;

export type Reason = keyof typeof REASON_CODES;

/** A batch-settlement failure: `code` for the reference dialect, `reason` for x402. */
export function rejected(
  reason: Reason,
  message: string,
  code: ErrorCode = REASON_CODES[reason],
): Failure {
  return failure(code, message, { x402Reason: `invalid_batch_settlement_evm_${reason}` });
}

/** `the <what> would revert[: detail]`: a simulation's refusal, or the chain's. */
export const wouldRevert = (
  what: "claim" | "refund" | "settle" | "deposit",
  detail: string | undefined,
  reason: Reason = `${what}_simulation_failed`,
) => rejected(reason, `the ${what} would revert${detail ? `: ${detail}` : ""}`);
