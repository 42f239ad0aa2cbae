/**
 * The smart-wallet path of `exact` on Solana (off unless switched on), as `@x402/svm` 2.27's
 * `enableSmartWalletVerification`: a Squads or Swig wallet moves the tokens in an inner
 * instruction, so when the static layout fails for a layout reason only, the transaction is taken
 * if its programs are allowed, our fee payers are in no instruction, its compute budget is within
 * the caps, and its simulation makes exactly one paying `TransferChecked` and none by our keys. The
 * confirmed transaction must show that transfer too (transfer-landed.ts): a simulation is not the
 * chain. Stricter than the reference: every fee payer of ours is kept out, and the whole fee is
 * capped, also without a compute-unit limit (the runtime's default then counts).
 */
import type { ErrorCode } from "../../protocol/errors.js";
import { checkLayout, memoRefusal, requiredUnits } from "./checks.js";
import {
  COMPUTE_BUDGET_PROGRAM,
  DEFAULT_MAX_FEE_LAMPORTS,
  MEMO_PROGRAM,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
} from "./constants.js";
import type { SvmTransaction } from "./decode.js";
import { defaultComputeUnits, transactionFeeLamports } from "./fees.js";
import {
  readComputeUnitLimit,
  readComputeUnitPrice,
  readMemo,
  SET_COMPUTE_UNIT_LIMIT,
  SET_COMPUTE_UNIT_PRICE,
} from "./instructions.js";
import { LAYOUT_RECOVERABLE, SVM_REASONS, type SvmReason } from "./reasons.js";
import type { SimulationFailure } from "./rpc.js";
import {
  type FoundTransfer,
  innerTransfers,
  payeeAccounts,
  topLevelTransfers,
} from "./transfers.js";
import type { SvmCheckOptions, SvmCheckResult, SvmPayment, SvmRequirements } from "./types.js";

export interface SmartWalletOptions {
  /** Programs allowed at the top level besides the compute budget and memos. */
  readonly allowedPrograms: readonly string[];
  readonly maxComputeUnits: number;
  /** The highest compute-unit price, micro-lamports per unit. */
  readonly maxPriorityFeeMicroLamports: bigint;
}

export interface SmartWalletRefusal {
  readonly ok: false;
  readonly x402Reason: SvmReason;
  readonly message: string;
  readonly payer?: string | undefined;
  /** Our code when it is finer than the reason's (a transfer that pays the wrong mint). */
  readonly code?: ErrorCode | undefined;
  /** The simulation failed: why (verify.ts names AlreadyProcessed and an unfunded fee payer). */
  readonly simulation?: SimulationFailure | undefined;
}

/** What the chain-free part found: the compute budget the fee follows from. */
export interface SmartWalletShape {
  readonly units: number;
  readonly price: bigint;
}

function refusal(
  x402Reason: SvmReason,
  message: string,
  extra: Partial<Pick<SmartWalletRefusal, "payer" | "code" | "simulation">> = {},
): SmartWalletRefusal {
  return { ok: false, x402Reason, message, ...extra };
}

/**
 * Whether the reference would try the smart-wallet path after this refusal. Our own caps come
 * before some layout checks, so past one the layout is checked again without them.
 */
export async function layoutRecoverable(
  refused: Extract<SvmCheckResult, { ok: false }>,
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
): { readonly ok: true; readonly shape: SmartWalletShape } | SmartWalletRefusal {
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
    if (isLimit || data[0] === SET_COMPUTE_UNIT_PRICE) {
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
    } else {
      return refusal(
        SVM_REASONS.smartWalletUnsupportedComputeBudget,
        `Instruction ${ix.index + 1} is a compute-budget instruction of type ${data[0]}; only SetComputeUnitLimit and SetComputeUnitPrice are taken`,
      );
    }
  }
  // Without a limit the runtime gives each other instruction its default share.
  const others = tx.instructions.filter((ix) => ix.programId !== COMPUTE_BUDGET_PROGRAM).length;
  const limit = units ?? defaultComputeUnits(others);
  const signers = tx.header.numSignerAccounts;
  const fee = transactionFeeLamports(signers, limit, price);
  if (fee > maxFeeLamports) {
    return refusal(
      SVM_REASONS.smartWalletPriorityFeeTooHigh,
      `The transaction would cost the fee payer ${fee} lamports (${signers} signatures and ${limit} compute units at ${price} micro-lamports); the cap is ${maxFeeLamports}`,
    );
  }
  return { ok: true, shape: { units: limit, price } };
}

/** After the simulation: the memo, then the one transfer that pays, at either level. */
export async function findSmartWalletTransfer(
  tx: SvmTransaction,
  innerInstructions: unknown,
  requirements: SvmRequirements,
  feePayers: readonly string[],
  shape: SmartWalletShape,
): Promise<{ readonly ok: true; readonly payment: SvmPayment } | SmartWalletRefusal> {
  const memos = tx.instructions.flatMap((ix) => readMemo(ix) ?? []);
  const badMemo = memoRefusal(memos, requirements);
  if (badMemo) return refusal(badMemo.x402Reason, badMemo.message);
  const keys = [...tx.staticAccounts, ...tx.loadedAccounts];
  const transfers = [...topLevelTransfers(tx), ...innerTransfers(innerInstructions, keys)];
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
  const pays = (t: FoundTransfer) =>
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
    return refusal(
      SVM_REASONS.smartWalletTransferMismatch,
      mismatch(first, requirements, payee, required),
      {
        payer: first.authority,
        code:
          first.mint !== requirements.asset
            ? "asset_mismatch"
            : payee.has(first.destination)
              ? "amount_mismatch"
              : "recipient_mismatch",
      },
    );
  }
  const [paid, second] = matching as [FoundTransfer, ...FoundTransfer[]];
  if (second !== undefined) {
    return refusal(
      SVM_REASONS.smartWalletMultipleTransfers,
      `The simulation makes ${matching.length} transfers that each pay requirements; a payment makes one`,
      { payer: paid.authority },
    );
  }
  return {
    ok: true,
    payment: {
      payer: paid.authority,
      amount: paid.amount,
      mint: paid.mint,
      decimals: paid.decimals ?? 0,
      tokenProgram: paid.programId === TOKEN_2022_PROGRAM ? TOKEN_2022_PROGRAM : TOKEN_PROGRAM,
      source: paid.source,
      destination: paid.destination,
      feePayer: tx.staticAccounts[0] as string,
      computeUnitLimit: shape.units,
      computeUnitPrice: shape.price,
      memos,
      recentBlockhash: tx.recentBlockhash,
      transaction: tx,
      smartWallet: true,
    },
  };
}

function mismatch(
  t: FoundTransfer,
  requirements: SvmRequirements,
  payee: ReadonlySet<string>,
  required: bigint,
): string {
  if (t.mint !== requirements.asset) {
    return `The transfer moves mint ${t.mint}, not requirements.asset ${requirements.asset}`;
  }
  if (!payee.has(t.destination)) {
    return `The transfer pays ${t.destination}, not an associated token account of requirements.payTo ${requirements.payTo}`;
  }
  return `The transfer moves ${t.amount}, less than the required ${required}`;
}
