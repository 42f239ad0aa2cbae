/** The chain-free checks, in the order and with the reasons of `@x402/svm` 2.27.0; stricter (with
 * its nearest reason) on compute, fee, lookup tables, fee payers. */
import { associatedTokenAddress } from "./ata.js";
import {
  DEFAULT_MAX_COMPUTE_UNITS,
  DEFAULT_MAX_FEE_LAMPORTS,
  MAX_COMPUTE_UNIT_PRICE_MICROLAMPORTS,
  MAX_INSTRUCTIONS,
  MIN_INSTRUCTIONS,
} from "./constants.js";
import { decodeSvmTransaction, type SvmTransaction } from "./decode.js";
import { feeOverCap } from "./fees.js";
import {
  isMemoOrLighthouse,
  readComputeUnitLimit,
  readComputeUnitPrice,
  readMemo,
  readTransferChecked,
  tokenPayer,
} from "./instructions.js";
import { type LookupTableReader, resolveLookupTables } from "./lookup-tables.js";
import { SVM_REASONS, type SvmReason, unknownInstructionReason } from "./reasons.js";
import { firstBadSignature } from "./signatures.js";
import {
  paymentOf,
  refusal,
  type SvmCheckOptions,
  type SvmCheckRefusal,
  type SvmCheckResult,
  type SvmRequirements,
} from "./types.js";

export type { SvmCheckResult } from "./types.js";

/** Checks a base64 wire transaction against the requirements; never throws. */
export async function checkSvmPayment(
  transaction: unknown,
  requirements: SvmRequirements,
  options: SvmCheckOptions,
): Promise<SvmCheckResult> {
  const version = options.x402Version ?? 2;
  const feePayer = requirements.extra?.feePayer;
  if (typeof feePayer !== "string" || feePayer === "") {
    return refusal(
      SVM_REASONS.missingFeePayer,
      "requirements.extra.feePayer must name the fee payer",
    );
  }
  if (!options.feePayers.includes(feePayer)) {
    return refusal(
      version === 1 ? SVM_REASONS.feePayerNotManagedV1 : SVM_REASONS.feePayerNotManaged,
      `requirements.extra.feePayer ${feePayer} is not a fee payer of this facilitator`,
    );
  }

  const decoded = decodeSvmTransaction(transaction);
  if (!decoded.ok) {
    const unsupported = decoded.unsupportedVersion !== undefined;
    return refusal(
      unsupported ? SVM_REASONS.unsupportedTransactionVersion : SVM_REASONS.couldNotBeDecoded,
      decoded.message,
    );
  }
  let tx = decoded.transaction;

  const signers = tx.header.numSignerAccounts;
  if (options.maxRequiredSignatures !== undefined && signers > options.maxRequiredSignatures) {
    return refusal(
      SVM_REASONS.excessiveSigners,
      `The transaction requires ${signers} signatures; at most ${options.maxRequiredSignatures} are accepted`,
    );
  }
  if (tx.staticAccounts[0] !== feePayer) {
    return refusal(
      SVM_REASONS.feePayerMismatch,
      `The transaction's fee payer is ${tx.staticAccounts[0]}, not requirements.extra.feePayer ${feePayer}`,
    );
  }
  const badSigner = firstBadSignature(tx);
  if (badSigner !== undefined) {
    return refusal(
      SVM_REASONS.signatureInvalid,
      `The signature of ${badSigner} is missing or invalid`,
    );
  }
  if (tx.lookupTableCount > 0) {
    const resolved = await withTables(tx, version, options.lookupTables);
    if (!resolved.ok) return resolved;
    tx = resolved.transaction;
  }
  const checked = await checkLayout(tx, requirements, options);
  // A refusal carries the resolved transaction: the smart-wallet path reads it.
  return checked.ok ? checked : { ...checked, transaction: tx };
}

/** The static layout and what it pays (lookup tables resolved), in the reference's order. */
export async function checkLayout(
  tx: SvmTransaction,
  requirements: SvmRequirements,
  options: SvmCheckOptions,
): Promise<SvmCheckResult> {
  const version = options.x402Version ?? 2;
  const ours = new Set(options.feePayers);
  const signers = tx.header.numSignerAccounts;
  const ixs = tx.instructions;
  const most = MAX_INSTRUCTIONS[version];
  if (ixs.length < MIN_INSTRUCTIONS || ixs.length > most) {
    return refusal(
      SVM_REASONS.instructionsLength,
      `The transaction has ${ixs.length} instructions; an exact payment has ${MIN_INSTRUCTIONS} to ${most}`,
    );
  }
  const [limitIx, priceIx, transferIx] = ixs as [(typeof ixs)[0], (typeof ixs)[0], (typeof ixs)[0]];
  const units = readComputeUnitLimit(limitIx);
  if (units === undefined) {
    return refusal(
      SVM_REASONS.computeLimitInstruction,
      "The first instruction must be the compute budget's SetComputeUnitLimit",
    );
  }
  const maxUnits = options.maxComputeUnits ?? DEFAULT_MAX_COMPUTE_UNITS;
  if (units > maxUnits) {
    return refusal(
      SVM_REASONS.computeLimitTooHigh,
      `The compute-unit limit ${units} is above the cap of ${maxUnits}`,
    );
  }
  const price = readComputeUnitPrice(priceIx);
  if (price === undefined) {
    return refusal(
      SVM_REASONS.computePriceInstruction,
      "The second instruction must be the compute budget's SetComputeUnitPrice",
    );
  }
  const maxPrice = options.maxComputeUnitPrice ?? MAX_COMPUTE_UNIT_PRICE_MICROLAMPORTS;
  if (price > maxPrice) {
    return refusal(
      SVM_REASONS.computePriceTooHigh,
      `The compute-unit price ${price} micro-lamports is above the cap of ${maxPrice}`,
    );
  }

  const maxFee = options.maxFeeLamports ?? DEFAULT_MAX_FEE_LAMPORTS;
  const overFee = feeOverCap(signers, units, price, maxFee);
  if (overFee) return refusal(SVM_REASONS.computePriceTooHigh, overFee);

  const payer = tokenPayer(ixs);
  if (payer === undefined) {
    return refusal(SVM_REASONS.noTransferInstruction, "The transaction has no token transfer");
  }
  // Every refusal from here on names the payer.
  const refuse = (reason: SvmReason, message: string) => refusal(reason, message, { payer });
  const transfer = readTransferChecked(transferIx);
  if (transfer === undefined) {
    return refuse(
      SVM_REASONS.noTransferInstruction,
      "The third instruction must be a TransferChecked of the SPL Token or Token-2022 program",
    );
  }
  if (ours.has(transfer.authority)) {
    return refuse(
      SVM_REASONS.feePayerTransferringFunds,
      `The transfer's authority ${transfer.authority} is a fee payer of this facilitator`,
    );
  }
  const exposed = transferIx.accounts.find((account) => ours.has(account));
  if (exposed !== undefined) {
    return refuse(
      SVM_REASONS.feePayerTransferringFunds,
      `The transfer names ${exposed}, a fee payer of this facilitator, among its accounts`,
    );
  }
  if (transfer.mint !== requirements.asset) {
    return refuse(
      SVM_REASONS.mintMismatch,
      `The transfer moves mint ${transfer.mint}, not requirements.asset ${requirements.asset}`,
    );
  }
  const payeeAccount = await associatedTokenAddress(
    requirements.payTo,
    requirements.asset,
    transfer.tokenProgram,
  );
  if (payeeAccount === undefined || transfer.destination !== payeeAccount) {
    return refuse(
      SVM_REASONS.recipientMismatch,
      payeeAccount === undefined
        ? `requirements.payTo ${requirements.payTo} is not a Solana address`
        : `The transfer pays ${transfer.destination}, not ${payeeAccount} (the associated token account of requirements.payTo ${requirements.payTo})`,
    );
  }
  const required = requiredUnits(requirements);
  if (transfer.amount !== required) {
    return refuse(
      SVM_REASONS.amountMismatch,
      required === undefined
        ? `The required amount ${requirements.amount} is not an integer`
        : `The transfer moves ${transfer.amount}, not the required ${required}`,
    );
  }

  const optional = ixs.slice(MIN_INSTRUCTIONS);
  for (const ix of optional) {
    if (isMemoOrLighthouse(ix)) continue;
    return refuse(
      unknownInstructionReason(ix.index, version),
      `Instruction ${ix.index + 1} (program ${ix.programId}) is neither a memo nor a Lighthouse assertion`,
    );
  }
  const memos = optional.flatMap((ix) => readMemo(ix) ?? []);
  const badMemo = memoRefusal(memos, requirements, payer);
  if (badMemo) return badMemo;
  for (const ix of ixs) {
    const named = ix === transferIx ? undefined : ix.accounts.find((a) => ours.has(a));
    if (named === undefined) continue;
    return refuse(
      SVM_REASONS.feePayerTransferringFunds,
      `Instruction ${ix.index + 1} (program ${ix.programId}) names ${named}, a fee payer of this facilitator`,
    );
  }

  const { authority: _, ...moved } = transfer;
  const fields = { payer, ...moved, computeUnitLimit: units, computeUnitPrice: price, memos };
  return { ok: true, payment: paymentOf(tx, fields) };
}

/** requirements.amount as an integer, or undefined when it is not one. */
export function requiredUnits(requirements: SvmRequirements): bigint | undefined {
  try {
    return BigInt(requirements.amount);
  } catch {
    return undefined;
  }
}

/** requirements.extra.memo, when set, must be the transaction's one memo. */
export function memoRefusal(
  memos: readonly string[],
  requirements: SvmRequirements,
  payer?: string,
): SvmCheckRefusal | undefined {
  const expected = requirements.extra?.memo;
  if (typeof expected !== "string" || expected === "") return undefined;
  if (memos.length !== 1) {
    return refusal(
      SVM_REASONS.memoCount,
      `requirements.extra.memo asks for one memo; the transaction has ${memos.length}`,
      { payer },
    );
  }
  if (memos[0] !== expected) {
    return refusal(SVM_REASONS.memoMismatch, "The memo differs from requirements.extra.memo", {
      payer,
    });
  }
  return undefined;
}

/** The transaction with the accounts its lookup tables load, or why they cannot be read. */
async function withTables(
  tx: SvmTransaction,
  version: 1 | 2,
  read: LookupTableReader | undefined,
): Promise<{ readonly ok: true; readonly transaction: SvmTransaction } | SvmCheckRefusal> {
  if (version === 1) {
    return refusal(
      SVM_REASONS.couldNotBeDecoded,
      "The transaction uses address lookup tables, which x402 v1 payments cannot (the official v1 scheme does not resolve them)",
    );
  }
  if (read === undefined) {
    return refusal(
      SVM_REASONS.lookupTablesUnavailable,
      "The transaction uses address lookup tables and no cluster is at hand to read them",
    );
  }
  const resolved = await resolveLookupTables(tx, read);
  if (resolved.ok) return resolved;
  const reason =
    resolved.why === "index" ? SVM_REASONS.couldNotBeDecoded : SVM_REASONS.lookupTablesUnresolved;
  return refusal(reason, resolved.message);
}
