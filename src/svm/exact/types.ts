/** What checkSvmPayment reads and answers. */
import type { ErrorCode } from "../../protocol/errors.js";
import type { SvmTransaction } from "./decode.js";
import type { TokenProgram } from "./instructions.js";
import type { LookupTableReader } from "./lookup-tables.js";
import type { SvmReason } from "./reasons.js";

/** What the checks read of the requirements (v1's `maxAmountRequired` read as `amount`). */
export interface SvmRequirements {
  readonly amount: string;
  readonly asset: string;
  readonly payTo: string;
  readonly extra?: Readonly<Record<string, unknown>> | null | undefined;
}

export interface SvmCheckOptions {
  /** This facilitator's fee payer addresses. */
  readonly feePayers: readonly string[];
  /** The x402 version of the payment: v1 allows 6 instructions and names two reasons unprefixed. */
  readonly x402Version?: 1 | 2 | undefined;
  /** The highest compute-unit limit accepted (DEFAULT_MAX_COMPUTE_UNITS when undefined). */
  readonly maxComputeUnits?: number | undefined;
  /** The highest compute-unit price, micro-lamports per unit (the reference's 5,000,000). */
  readonly maxComputeUnitPrice?: bigint | undefined;
  /** The most lamports the transaction may cost the fee payer (DEFAULT_MAX_FEE_LAMPORTS when undefined). */
  readonly maxFeeLamports?: bigint | undefined;
  /** The most signatures a transaction may require; no limit when undefined (as the reference). */
  readonly maxRequiredSignatures?: number | undefined;
  /** Reads lookup tables; without it a transaction using them is refused. */
  readonly lookupTables?: LookupTableReader | undefined;
}

/** A payment that passed every chain-free check. */
export interface SvmPayment {
  /** The transfer's authority, the payer's wallet. */
  readonly payer: string;
  readonly amount: bigint;
  readonly mint: string;
  readonly decimals: number;
  readonly tokenProgram: TokenProgram;
  readonly source: string;
  /** The payee's associated token account for the mint. */
  readonly destination: string;
  /** The transaction's fee payer, one of ours, who signs at settle. */
  readonly feePayer: string;
  readonly computeUnitLimit: number;
  readonly computeUnitPrice: bigint;
  readonly memos: readonly string[];
  readonly recentBlockhash: string;
  readonly transaction: SvmTransaction;
  /** A smart wallet's: found in a simulation, so the landed transaction must show it too. */
  readonly smartWallet?: true | undefined;
}

export interface SvmCheckRefusal {
  readonly ok: false;
  readonly x402Reason: SvmReason;
  readonly message: string;
  /** The payer, once the transaction names one (x402 answers carry it on failure). */
  readonly payer?: string | undefined;
  /** The decoded transaction (lookup tables resolved), once the checks got that far. */
  readonly transaction?: SvmTransaction | undefined;
  /** Our code when it is finer than the reason's (a smart wallet's transfer of the wrong mint). */
  readonly code?: ErrorCode | undefined;
}

export type SvmCheckResult = { readonly ok: true; readonly payment: SvmPayment } | SvmCheckRefusal;

/** A payment of `tx`: the fee payer (key 0), blockhash and transaction come from it. */
export function paymentOf(
  tx: SvmTransaction,
  fields: Omit<SvmPayment, "feePayer" | "recentBlockhash" | "transaction">,
): SvmPayment {
  const feePayer = tx.staticAccounts[0] as string;
  return { ...fields, feePayer, recentBlockhash: tx.recentBlockhash, transaction: tx };
}

export function refusal(
  x402Reason: SvmReason,
  message: string,
  extra: Partial<Pick<SvmCheckRefusal, "payer" | "code">> = {},
): SvmCheckRefusal {
  return { ok: false, x402Reason, message, ...extra };
}
