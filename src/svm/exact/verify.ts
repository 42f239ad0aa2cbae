/** As @x402/svm 2.27.0: the simulation's `BlockhashNotFound` is the only freshness check there. */
import { type ErrorCode, type Failure, failure } from "../../protocol/errors.js";
import type { PaymentRequest } from "../../protocol/request.js";
import { checkSvmPayment } from "./checks.js";
import type { SvmContext } from "./context.js";
import type { SvmTransaction } from "./decode.js";
import { rpcLookupTableReader } from "./lookup-tables.js";
import { SVM_REASONS, type SvmReason } from "./reasons.js";
import { type SimulationFailure, simulate } from "./rpc.js";
import {
  checkSmartWalletShape,
  findSmartWalletTransfer,
  layoutRecoverable,
  type SmartWalletOptions,
} from "./smart-wallet.js";
import type { SvmCheckRefusal, SvmPayment } from "./types.js";

export interface SvmRefusal {
  readonly ok: false;
  readonly failure: Failure;
  readonly payer?: string | undefined;
  /** A smart wallet's transaction whose simulation failed (it may have landed: settle.ts). */
  readonly simulated?: SvmTransaction | undefined;
}

export type SvmVerifyResult = { readonly ok: true; readonly payer: string } | SvmRefusal;

/** Our code for the reference's reasons; the others are `unexpected_instructions`. */
const CODES: Partial<Record<SvmReason, ErrorCode>> = {
  [SVM_REASONS.missingFeePayer]: "missing_fee_payer",
  [SVM_REASONS.feePayerNotManaged]: "facilitator_mismatch",
  [SVM_REASONS.feePayerNotManagedV1]: "facilitator_mismatch",
  [SVM_REASONS.couldNotBeDecoded]: "invalid_request",
  [SVM_REASONS.unsupportedTransactionVersion]: "unsupported_transaction_version",
  [SVM_REASONS.feePayerMismatch]: "fee_payer_mismatch",
  [SVM_REASONS.signatureInvalid]: "invalid_signature",
  [SVM_REASONS.lookupTablesUnresolved]: "lookup_table_unresolved",
  [SVM_REASONS.computeLimitTooHigh]: "compute_budget_too_high",
  [SVM_REASONS.computePriceTooHigh]: "compute_budget_too_high",
  [SVM_REASONS.feePayerTransferringFunds]: "fee_payer_in_transfer",
  [SVM_REASONS.mintMismatch]: "asset_mismatch",
  [SVM_REASONS.recipientMismatch]: "recipient_mismatch",
  [SVM_REASONS.amountMismatch]: "amount_mismatch",
  [SVM_REASONS.memoMismatch]: "memo_mismatch",
  [SVM_REASONS.smartWalletFeePayerNotIsolated]: "fee_payer_in_transfer",
  [SVM_REASONS.smartWalletComputeUnitsTooHigh]: "compute_budget_too_high",
  [SVM_REASONS.smartWalletPriorityFeeTooHigh]: "compute_budget_too_high",
  [SVM_REASONS.smartWalletComputeBudgetViolation]: "compute_budget_too_high",
  [SVM_REASONS.smartWalletSimulationFailed]: "simulation_failed",
  [SVM_REASONS.smartWalletCannotDeriveAta]: "recipient_mismatch",
  // Finer where the first transfer says what is wrong (smart-wallet.ts names the code).
  [SVM_REASONS.smartWalletTransferMismatch]: "recipient_mismatch",
};

/** The reference's reasons outside checkSvmPayment, by x402 version (v1 spells them bare). */
export const REASONS = {
  scheme: { 1: "unsupported_scheme", 2: "invalid_exact_svm_unsupported_scheme" },
  network: { 1: "network_mismatch", 2: "invalid_exact_svm_network_mismatch" },
  simulation: {
    1: "transaction_simulation_failed",
    2: "invalid_exact_svm_transaction_simulation_failed",
  },
} as const;

/** `status` overrides the table's HTTP status for this one refusal. */
export function refuse(
  code: ErrorCode,
  x402Reason: string,
  message: string,
  payer?: string,
  status?: number,
) {
  const extra = status === undefined ? { x402Reason } : { x402Reason, status };
  return { ok: false, failure: failure(code, message, extra), payer } as SvmRefusal;
}

/** Scheme, network and the chain-free checks: the payment, or why it is refused. */
export async function checkSvmRequest(
  ctx: SvmContext,
  request: PaymentRequest,
): Promise<{ readonly ok: true; readonly payment: SvmPayment } | SvmRefusal> {
  const { requirements, x402Version, paths } = request;
  if (request.payloadScheme !== "exact") {
    return refuse(
      "scheme_mismatch",
      REASONS.scheme[x402Version],
      `the payload's scheme "${request.payloadScheme}" is not "exact"`,
    );
  }
  if (request.payloadNetwork !== requirements.network) {
    return refuse(
      "network_mismatch",
      REASONS.network[x402Version],
      `the payload's network "${request.payloadNetwork}" differs from ${paths.requirements}.network "${requirements.network}"`,
    );
  }
  const options = {
    feePayers: ctx.feePayers,
    x402Version,
    maxFeeLamports: ctx.maxFeeLamports,
    lookupTables: rpcLookupTableReader(ctx.client),
  };
  const checked = await checkSvmPayment(request.payload.transaction, requirements, options);
  if (checked.ok) return { ok: true, payment: checked.payment };
  // The reference's smart-wallet path is for x402 v2 only (its v1 scheme has none).
  if (ctx.smartWallets && x402Version === 2 && checked.transaction) {
    if (await layoutRecoverable(checked, requirements, options)) {
      return checkSmartWallet(ctx, request, checked.transaction, ctx.smartWallets);
    }
  }
  return refuseChecked(checked);
}

/** The smart-wallet path; a refusal after simulating carries the transaction (settle follows it). */
async function checkSmartWallet(
  ctx: SvmContext,
  request: PaymentRequest,
  tx: SvmTransaction,
  options: SmartWalletOptions,
): Promise<{ readonly ok: true; readonly payment: SvmPayment } | SvmRefusal> {
  const shaped = checkSmartWalletShape(tx, ctx.feePayers, options, ctx.maxFeeLamports);
  if (!shaped.ok) return refuseChecked(shaped);
  const simulated = await simulateAsSent(ctx, request, true);
  if (!simulated.ok) {
    const reason = SVM_REASONS.smartWalletSimulationFailed;
    return { ...simulationRefusal(request, simulated, {}, "verify", reason), simulated: tx };
  }
  const { innerInstructions } = simulated;
  const found = await findSmartWalletTransfer(
    tx,
    innerInstructions,
    request.requirements,
    ctx.feePayers,
    shaped.shape,
  );
  return found.ok ? found : refuseChecked(found);
}

function refuseChecked(refused: SvmCheckRefusal): SvmRefusal {
  const code = refused.code ?? CODES[refused.x402Reason] ?? "unexpected_instructions";
  return refuse(code, refused.x402Reason, refused.message, refused.payer);
}

export async function verifyExactSvm(
  ctx: SvmContext,
  request: PaymentRequest,
): Promise<SvmVerifyResult> {
  const checked = await checkSvmRequest(ctx, request);
  if (!checked.ok) return checked;
  const { payer } = checked.payment;
  // A smart wallet's payment was simulated on its path already.
  if (checked.payment.smartWallet) return { ok: true, payer };
  const simulated = await simulateAsSent(ctx, request);
  if (!simulated.ok) return simulationRefusal(request, simulated, checked.payment, "verify");
  return { ok: true, payer };
}

/** The payer's transaction simulated as it came (our signature not yet in it). */
function simulateAsSent(ctx: SvmContext, request: PaymentRequest, innerInstructions?: true) {
  const options = { sigVerify: false, commitment: "confirmed", innerInstructions } as const;
  return simulate(ctx.client, request.payload.transaction as string, options);
}

/** A failed simulation; finer than the reference for a landed one and for our unfunded fee payer. */
export function simulationRefusal(
  request: PaymentRequest,
  why: SimulationFailure,
  payment: { readonly payer?: string | undefined; readonly feePayer?: string | undefined },
  operation: "verify" | "settle",
  reason: string = REASONS.simulation[request.x402Version],
) {
  if (why.err === "AlreadyProcessed") {
    // At verify a 400 as the other refusals (EVM's nonce_already_used); settle keeps the 409.
    return refuse(
      "duplicate_settlement",
      reason,
      "this transaction already landed (the cluster says AlreadyProcessed): it was settled before, and a replay is not paid again",
      payment.payer,
      operation === "verify" ? 400 : undefined,
    );
  }
  if (feePayerUnfunded(why.err)) {
    return refuse(
      "fee_payer_unfunded",
      reason,
      `this facilitator's fee payer ${payment.feePayer ?? request.requirements.extra?.feePayer} cannot pay the transaction's fee on ${request.requirements.network} (${why.text}); the payment itself was not at fault`,
      payment.payer,
    );
  }
  return refuse(
    "simulation_failed",
    reason,
    `the transaction fails in simulation: ${why.text}`,
    payment.payer,
  );
}

/** Runtime errors about the fee payer's account: missing, short of the fee, or of its rent. */
function feePayerUnfunded(err: unknown): boolean {
  if (err === "AccountNotFound" || err === "InsufficientFundsForFee") return true;
  const rent = (err as { InsufficientFundsForRent?: { account_index?: unknown } } | null)
    ?.InsufficientFundsForRent;
  return rent?.account_index === 0;
}
