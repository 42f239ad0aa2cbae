/**
 * The x402-dialect reason strings of the `exact` scheme on Solana, exactly as the official
 * `@x402/svm` 2.27.0 facilitator names them (`src/exact/facilitator/errors.ts`; the v1 scheme
 * spells two of them without the prefix, `src/exact/v1/facilitator/scheme.ts`).
 */
export const SVM_REASONS = {
  missingFeePayer: "invalid_exact_svm_payload_missing_fee_payer",
  feePayerNotManaged: "invalid_exact_svm_fee_payer_not_managed_by_facilitator",
  feePayerNotManagedV1: "fee_payer_not_managed_by_facilitator",
  couldNotBeDecoded: "invalid_exact_svm_payload_transaction_could_not_be_decoded",
  /**
   * Not in 2.27: the upstream change after it that advertises `extra.transactionVersions` refuses
   * a message of another version with this reason, in both x402 versions.
   */
  unsupportedTransactionVersion: "unsupported_transaction_version",
  excessiveSigners: "invalid_exact_svm_payload_excessive_signers",
  feePayerMismatch: "invalid_exact_svm_fee_payer_mismatch",
  signatureInvalid: "invalid_exact_svm_payload_signature_invalid",
  /**
   * Tables used but no way to read them (the checks without a chain). The reference adds
   * ": transaction uses Address Lookup Tables but signer does not implement …".
   */
  lookupTablesUnavailable: "invalid_exact_svm_smart_wallet_alt_resolution_not_available",
  /**
   * A table the cluster lacks or an account that is not one (the reference adds ": " and kit's
   * error); ours also for more tables or table accounts than the cap (the reference has none).
   */
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
  // The smart-wallet path (smart-wallet.ts), taken only when it is switched on. Where the reference
  // appends ": " and a detail, ours says it in the message and keeps the reason bare.
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

/**
 * The static layout's reasons after which the reference tries the smart-wallet path (its
 * LAYOUT_RECOVERABLE_REASONS: an unknown seventh instruction is not among them).
 */
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
  const named =
    x402Version === 1
      ? [
          SVM_REASONS.unknownFourthInstruction,
          SVM_REASONS.unknownFifthInstruction,
          SVM_REASONS.unknownSixthInstruction,
        ]
      : [
          SVM_REASONS.unknownFourthInstruction,
          SVM_REASONS.unknownFifthInstruction,
          SVM_REASONS.unknownSixthInstruction,
          SVM_REASONS.unknownSeventhInstruction,
        ];
  return named[index - 3] ?? SVM_REASONS.unknownOptionalInstruction;
}
