/** The x402 reason strings of `exact` on Solana, as `@x402/svm` 2.27.0 names them (v1 drops two prefixes). */
export const SVM_REASONS = {
  missingFeePayer: "invalid_exact_svm_payload_missing_fee_payer",
  feePayerNotManaged: "invalid_exact_svm_fee_payer_not_managed_by_facilitator",
  feePayerNotManagedV1: "fee_payer_not_managed_by_facilitator",
  couldNotBeDecoded: "invalid_exact_svm_payload_transaction_could_not_be_decoded",
  /** After 2.27 (with `extra.transactionVersions`), in both x402 versions. */
  unsupportedTransactionVersion: "unsupported_transaction_version",
  excessiveSigners: "invalid_exact_svm_payload_excessive_signers",
  feePayerMismatch: "invalid_exact_svm_fee_payer_mismatch",
  signatureInvalid: "invalid_exact_svm_payload_signature_invalid",
  /** Tables used and no chain to read them. */
  lookupTablesUnavailable: "invalid_exact_svm_smart_wallet_alt_resolution_not_available",
  /** A table missing or not one; ours also past the caps. */
  lookupTablesUnresolved: "invalid_exact_svm_smart_wallet_alt_resolution_failed",
  instructionsLength: "invalid_exact_svm_payload_transaction_instructions_length",
  computeLimitInstruction:
    "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction",
  computeLimitTooHigh:
    "invalid_exact_svm_payload_transaction_instructions_compute_limit_instruction_too_high",
  computePriceInstruction:
    "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction",
  computePriceTooHigh:
    "invalid_exact_svm_payload_transaction_instructions_compute_price_instruction_too_high",
  noTransferInstruction: "invalid_exact_svm_payload_no_transfer_instruction",
  feePayerTransferringFunds: "invalid_exact_svm_payload_transaction_fee_payer_transferring_funds",
  mintMismatch: "invalid_exact_svm_payload_mint_mismatch",
  recipientMismatch: "invalid_exact_svm_payload_recipient_mismatch",
  amountMismatch: "invalid_exact_svm_payload_amount_mismatch",
  unknownFourthInstruction: "invalid_exact_svm_payload_unknown_fourth_instruction",
  unknownFifthInstruction: "invalid_exact_svm_payload_unknown_fifth_instruction",
  unknownSixthInstruction: "invalid_exact_svm_payload_unknown_sixth_instruction",
  unknownSeventhInstruction: "invalid_exact_svm_payload_unknown_seventh_instruction",
  unknownOptionalInstruction: "invalid_exact_svm_payload_unknown_optional_instruction",
  memoCount: "invalid_exact_svm_payload_memo_count",
  memoMismatch: "invalid_exact_svm_payload_memo_mismatch",
  // The smart-wallet path; the reference's ": detail" suffixes are in our messages instead.
  smartWalletProgramNotAllowed: "invalid_exact_svm_smart_wallet_program_not_allowed",
  smartWalletFeePayerNotIsolated: "invalid_exact_svm_smart_wallet_fee_payer_not_isolated",
  smartWalletMalformedComputeBudget: "invalid_exact_svm_smart_wallet_malformed_compute_budget",
  smartWalletMalformedComputeLimit: "invalid_exact_svm_smart_wallet_malformed_compute_limit",
  smartWalletMalformedComputePrice: "invalid_exact_svm_smart_wallet_malformed_compute_price",
  smartWalletComputeUnitsTooHigh: "invalid_exact_svm_smart_wallet_compute_units_too_high",
  smartWalletPriorityFeeTooHigh: "invalid_exact_svm_smart_wallet_priority_fee_too_high",
  smartWalletUnsupportedComputeBudget:
    "invalid_exact_svm_smart_wallet_unsupported_compute_budget_instruction",
  /** In the reference's list; it never answers it (its own checks throw the finer reasons). */
  smartWalletComputeBudgetViolation: "invalid_exact_svm_smart_wallet_compute_budget_violation",
  smartWalletSimulationFailed: "invalid_exact_svm_smart_wallet_simulation_failed",
  smartWalletCannotDeriveAta: "invalid_exact_svm_smart_wallet_cannot_derive_destination_ata",
  smartWalletNoTransfer: "invalid_exact_svm_smart_wallet_no_transfer_in_simulation",
  smartWalletTransferMismatch: "invalid_exact_svm_smart_wallet_transfer_mismatch",
  smartWalletMultipleTransfers: "invalid_exact_svm_smart_wallet_multiple_matching_transfers",
} as const;

/** After settling a smart-wallet payment: the confirmed transaction does not show its transfer. */
export const POST_SETTLEMENT_NOT_CONFIRMED = "post_settlement_transfer_not_confirmed";

/** The reference's LAYOUT_RECOVERABLE_REASONS: after these the smart-wallet path is tried. */
export const LAYOUT_RECOVERABLE: ReadonlySet<string> = new Set([
  SVM_REASONS.instructionsLength,
  SVM_REASONS.noTransferInstruction,
  SVM_REASONS.unknownFourthInstruction,
  SVM_REASONS.unknownFifthInstruction,
  SVM_REASONS.unknownSixthInstruction,
  SVM_REASONS.unknownOptionalInstruction,
  SVM_REASONS.computeLimitInstruction,
  SVM_REASONS.computePriceInstruction,
]);

export type SvmReason = (typeof SVM_REASONS)[keyof typeof SVM_REASONS];

/** The reason for an unexpected instruction at position 3, 4, 5, … (0-based). */
export function unknownInstructionReason(index: number, x402Version: 1 | 2): SvmReason {
  const named = [
    SVM_REASONS.unknownFourthInstruction,
    SVM_REASONS.unknownFifthInstruction,
    SVM_REASONS.unknownSixthInstruction,
    SVM_REASONS.unknownSeventhInstruction,
  ].slice(0, x402Version === 1 ? 3 : 4);
  return named[index - 3] ?? SVM_REASONS.unknownOptionalInstruction;
}
