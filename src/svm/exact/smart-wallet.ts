/** Smart wallets (off by default), as @x402/svm 2.27's `enableSmartWalletVerification`: a Squads or
 * Swig wallet pays in an inner instruction the simulation shows. Stricter: no payer of ours, fee cap. */
import type { ErrorCode } from "../../protocol/errors.js";
import { checkLayout, memoRefusal, requiredUnits } from "./checks.js";
import { COMPUTE_BUDGET_PROGRAM, DEFAULT_MAX_FEE_LAMPORTS, MEMO_PROGRAM } from "./constants.js";
import type { SvmTransaction } from "./decode.js";
import { defaultComputeUnits, feeOverCap } from "./fees.js";
import {
  readComputeUnitLimit,
  readComputeUnitPrice,
  readMemo,
  SET_COMPUTE_UNIT_LIMIT,
  SET_COMPUTE_UNIT_PRICE,
  type TokenTransfer,
} from "./instructions.js";
import { LAYOUT_RECOVERABLE, SVM_REASONS } from "./reasons.js";
import { payeeAccounts, transfersOf } from "./transfers.js";
import {
  paymentOf,
  refusal,
  type SvmCheckOptions,
  type SvmCheckRefusal,
  type SvmPayment,
  type SvmRequirements,
} from "./types.js";

export interface SmartWalletOptions {
  /** Programs allowed at the top level besides the compute budget and memos. */
  readonly allowedPrograms: readonly string[];
  readonly maxComputeUnits: number;
  /** The highest compute-unit price, micro-lamports per unit. */
  readonly maxPriorityFeeMicroLamports: bigint;
}

/** Whether the reference would try the smart-wallet path after this refusal (our caps lifted). */
export async function layoutRecoverable(
  refused: SvmCheckRefusal,
  requirements: SvmRequirements,
  options: SvmCheckOptions,
): Promise<boolean> {
  if (LAYOUT_RECOVERABLE.has(refused.x402Reason)) return true;
  const ownCap =
    refused.x402Reason === SVM_REASONS.computeLimitTooHigh ||
    refused.x402Reason === SVM_REASONS.computePriceTooHigh;
  if (!ownCap || !refused.transaction) return false;
  const again = await checkLayout(refused.transaction, requirements, {
    ...options,
    maxComputeUnits: Number.MAX_SAFE_INTEGER,
    maxFeeLamports: 2n ** 64n,
  });
  return !again.ok && LAYOUT_RECOVERABLE.has(again.x402Reason);
}

/** The checks before the simulation, in the reference's order, then our fee cap. */
export function checkSmartWalletShape(
  tx: SvmTransaction,
  feePayers: readonly string[],
  options: SmartWalletOptions,
  maxFeeLamports: bigint = DEFAULT_MAX_FEE_LAMPORTS,
): { readonly ok: true; readonly shape: { units: number; price: bigint } } | SvmCheckRefusal {
  const allowed = new Set(options.allowedPrograms);
  for (const ix of tx.instructions) {
    if (ix.programId === COMPUTE_BUDGET_PROGRAM || ix.programId === MEMO_PROGRAM) continue;
    if (allowed.has(ix.programId)) continue;
    return refusal(
      SVM_REASONS.smartWalletProgramNotAllowed,
      `Instruction ${ix.index + 1} calls program ${ix.programId}, which is not among the smart-wallet programs allowed here`,
    );
  }
  const ours = new Set(feePayers);
  for (const ix of tx.instructions) {
    if (ours.has(ix.programId)) {
      return refusal(
        SVM_REASONS.smartWalletFeePayerNotIsolated,
        `Instruction ${ix.index + 1} calls fee payer ${ix.programId} as its program`,
      );
    }
    const named = ix.accounts.find((account) => ours.has(account));
    if (named !== undefined) {
      return refusal(
        SVM_REASONS.smartWalletFeePayerNotIsolated,
        `Instruction ${ix.index + 1} (program ${ix.programId}) names ${named}, a fee payer of this facilitator`,
      );
    }
  }
  let units: number | undefined;
  let price = 0n;
  for (const ix of tx.instructions) {
    if (ix.programId !== COMPUTE_BUDGET_PROGRAM) continue;
    const { data } = ix;
    if (data.length === 0) {
      return refusal(
        SVM_REASONS.smartWalletMalformedComputeBudget,
        `Instruction ${ix.index + 1} is a compute-budget instruction with no data`,
      );
    }
    const isLimit = data[0] === SET_COMPUTE_UNIT_LIMIT;
    if (!isLimit && data[0] !== SET_COMPUTE_UNIT_PRICE) {
      return refusal(
        SVM_REASONS.smartWalletUnsupportedComputeBudget,
        `Instruction ${ix.index + 1} is a compute-budget instruction of type ${data[0]}; only SetComputeUnitLimit and SetComputeUnitPrice are taken`,
      );
    }
    const value = isLimit ? readComputeUnitLimit(ix) : readComputeUnitPrice(ix);
    const name = isLimit ? "SetComputeUnitLimit" : "SetComputeUnitPrice";
    if (value === undefined) {
      return refusal(
        isLimit
          ? SVM_REASONS.smartWalletMalformedComputeLimit
          : SVM_REASONS.smartWalletMalformedComputePrice,
        `Instruction ${ix.index + 1} is a ${name} of ${data.length} bytes`,
      );
    }
    if (typeof value === "number") units = value;
    else price = value;
    if (isLimit && value > options.maxComputeUnits) {
      return refusal(
        SVM_REASONS.smartWalletComputeUnitsTooHigh,
        `The compute-unit limit ${value} is above the smart-wallet cap of ${options.maxComputeUnits}`,
      );
    }
    if (!isLimit && value > options.maxPriorityFeeMicroLamports) {
      return refusal(
        SVM_REASONS.smartWalletPriorityFeeTooHigh,
        `The compute-unit price ${value} micro-lamports is above the smart-wallet cap of ${options.maxPriorityFeeMicroLamports}`,
      );
    }
  }
  // Without a limit the runtime gives each other instruction its default share.
  const others = tx.instructions.filter((ix) => ix.programId !== COMPUTE_BUDGET_PROGRAM).length;
  const limit = units ?? defaultComputeUnits(others);
  const overFee = feeOverCap(tx.header.numSignerAccounts, limit, price, maxFeeLamports);
  if (overFee) return refusal(SVM_REASONS.smartWalletPriorityFeeTooHigh, overFee);
  return { ok: true, shape: { units: limit, price } };
}

/** After the simulation: the memo, then the one transfer that pays, at either level. */
export async function findSmartWalletTransfer(
  tx: SvmTransaction,
  innerInstructions: unknown,
  requirements: SvmRequirements,
  feePayers: readonly string[],
  shape: { readonly units: number; readonly price: bigint },
): Promise<{ readonly ok: true; readonly payment: SvmPayment } | SvmCheckRefusal> {
  const memos = tx.instructions.flatMap((ix) => readMemo(ix) ?? []);
  const badMemo = memoRefusal(memos, requirements);
  if (badMemo) return badMemo;
  const transfers = transfersOf(tx, innerInstructions);
  const ours = new Set(feePayers);
  const byUs = transfers.find((t) => ours.has(t.authority));
  if (byUs) {
    return refusal(
      SVM_REASONS.feePayerTransferringFunds,
      `A transfer in the transaction is authorised by ${byUs.authority}, a fee payer of this facilitator`,
      { payer: byUs.authority },
    );
  }
  const payee = await payeeAccounts(requirements);
  if (payee.size === 0) {
    return refusal(
      SVM_REASONS.smartWalletCannotDeriveAta,
      `requirements.payTo ${requirements.payTo} and asset ${requirements.asset} have no associated token account`,
    );
  }
  const required = requiredUnits(requirements);
  if (required === undefined) {
    return refusal(
      SVM_REASONS.smartWalletTransferMismatch,
      `The required amount ${requirements.amount} is not an integer`,
      { code: "amount_mismatch" },
    );
  }
  const pays = (t: TokenTransfer) =>
    t.mint === requirements.asset && payee.has(t.destination) && t.amount >= required;
  const matching = transfers.filter(pays);
  const [first] = transfers;
  if (matching.length === 0) {
    if (first === undefined) {
      return refusal(
        SVM_REASONS.smartWalletNoTransfer,
        "Neither the transaction nor its simulation makes a TransferChecked of either token program",
      );
    }
    const [code, message] = mismatch(first, requirements, payee, required);
    return refusal(SVM_REASONS.smartWalletTransferMismatch, message, {
      payer: first.authority,
      code,
    });
  }
  const [paid, second] = matching as [TokenTransfer, ...TokenTransfer[]];
  if (second !== undefined) {
    return refusal(
      SVM_REASONS.smartWalletMultipleTransfers,
      `The simulation makes ${matching.length} transfers that each pay requirements; a payment makes one`,
      { payer: paid.authority },
    );
  }
  return { ok: true, payment: smartWalletPayment(tx, paid, shape, memos) };
}

/** A smart wallet's payment: the transfer its simulation showed (or the journal kept). */
export function smartWalletPayment(
  tx: SvmTransaction,
  transfer: TokenTransfer,
  shape = { units: 0, price: 0n },
  memos: readonly string[] = [],
): SvmPayment {
  const { authority, programId, decimals, ...moved } = transfer;
  return paymentOf(tx, {
    ...moved,
    payer: authority,
    decimals: decimals ?? 0,
    tokenProgram: programId,
    computeUnitLimit: shape.units,
    computeUnitPrice: shape.price,
    memos,
    smartWallet: true,
  });
}

function mismatch(
  t: TokenTransfer,
  requirements: SvmRequirements,
  payee: ReadonlySet<string>,
  required: bigint,
): [ErrorCode, string] {
  if (t.mint !== requirements.asset) {
    const why = `The transfer moves mint ${t.mint}, not requirements.asset ${requirements.asset}`;
    return ["asset_mismatch", why];
  }
  if (!payee.has(t.destination)) {
    const why = `The transfer pays ${t.destination}, not an associated token account of requirements.payTo ${requirements.payTo}`;
    return ["recipient_mismatch", why];
  }
  return ["amount_mismatch", `The transfer moves ${t.amount}, less than the required ${required}`];
}
