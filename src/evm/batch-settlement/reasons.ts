/** The official facilitator's batch-settlement reasons (`@x402/evm` 2.27) we answer, by suffix. */
import { type ErrorCode, type Failure, failure } from "../../protocol/errors.js";

const REASONS = [
  "scheme",
  "network_mismatch",
  "payload_type",
  "channel_id_mismatch",
  "receiver_mismatch",
  "receiver_authorizer_mismatch",
  "token_mismatch",
  "withdraw_delay_mismatch",
  "withdraw_delay_out_of_range",
  "voucher_signature",
  "channel_not_found",
  "cumulative_exceeds_balance",
  "cumulative_below_claimed",
  "cumulative_amount_mismatch",
  "insufficient_balance",
  "missing_eip712_domain",
  "payload_authorization_valid_before",
  "payload_authorization_valid_after",
  "receive_authorization_signature",
  "erc3009_authorization_required",
  "permit2_invalid_spender",
  "permit2_amount_mismatch",
  "permit2_deadline_expired",
  "permit2_invalid_signature",
  "permit2_allowance_required",
  "deposit_simulation_failed",
  "deposit_transaction_failed",
  "claim_simulation_failed",
  "settle_simulation_failed",
  "nothing_to_settle",
  "refund_no_balance",
  "refund_amount_invalid",
  "refund_simulation_failed",
  "authorizer_not_configured",
  "authorizer_address_mismatch",
  "eip6492_factory_not_allowed",
  "eip2612_amount_mismatch",
  "smart_wallet_deployment_failed",
] as const;

export type Reason = (typeof REASONS)[number];

/** A batch-settlement failure: `code` for the reference dialect, `reason` for x402. */
export function rejected(code: ErrorCode, reason: Reason, message: string): Failure {
  return failure(code, message, { x402Reason: `invalid_batch_settlement_evm_${reason}` });
}

/** `the <what> would revert[: detail]`: a simulation's refusal, or the chain's. */
export const wouldRevert = (
  what: "claim" | "refund" | "settle" | "deposit",
  detail: string | undefined,
  code: ErrorCode = "simulation_failed",
  reason: Reason = `${what}_simulation_failed`,
) => rejected(code, reason, `the ${what} would revert${detail ? `: ${detail}` : ""}`);
