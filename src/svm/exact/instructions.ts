/**
 * Readers of an `exact` transaction's instructions; each answers undefined for anything else.
 * Layouts (LE): SetComputeUnitLimit [2, u32]; SetComputeUnitPrice [3, u64]; TransferChecked
 * [12, u64 amount, u8 decimals] over [source, mint, destination, authority, ...signers]. Trailing
 * bytes are tolerated, as the reference's parsers tolerate them.
 */
import {
  COMPUTE_BUDGET_PROGRAM,
  LIGHTHOUSE_PROGRAM,
  MEMO_PROGRAM,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
} from "./constants.js";
import type { SvmInstruction } from "./decode.js";

/** The compute-budget program's instruction types this code reads (the first data byte). */
export const SET_COMPUTE_UNIT_LIMIT = 2;
export const SET_COMPUTE_UNIT_PRICE = 3;
export const TRANSFER_CHECKED = 12;

export interface TransferChecked {
  readonly tokenProgram: typeof TOKEN_PROGRAM | typeof TOKEN_2022_PROGRAM;
  readonly source: string;
  readonly mint: string;
  readonly destination: string;
  /** The owner (or delegate, or multisig) that authorises the transfer: the payer. */
  readonly authority: string;
  /** Multisig signers after the authority, if any. */
  readonly signers: readonly string[];
  readonly amount: bigint;
  readonly decimals: number;
}

function view(data: Uint8Array): DataView {
  return new DataView(data.buffer, data.byteOffset, data.byteLength);
}

export function isComputeBudget(ix: SvmInstruction): boolean {
  return ix.programId === COMPUTE_BUDGET_PROGRAM;
}

export function isTokenProgram(programId: string): boolean {
  return programId === TOKEN_PROGRAM || programId === TOKEN_2022_PROGRAM;
}

/** SetComputeUnitLimit's units, or undefined when the instruction is not one. */
export function readComputeUnitLimit(ix: SvmInstruction): number | undefined {
  if (!isComputeBudget(ix) || ix.data[0] !== SET_COMPUTE_UNIT_LIMIT || ix.data.length < 5) {
    return undefined;
  }
  return view(ix.data).getUint32(1, true);
}

/** SetComputeUnitPrice's micro-lamports per unit, or undefined when the instruction is not one. */
export function readComputeUnitPrice(ix: SvmInstruction): bigint | undefined {
  if (!isComputeBudget(ix) || ix.data[0] !== SET_COMPUTE_UNIT_PRICE || ix.data.length < 9) {
    return undefined;
  }
  return view(ix.data).getBigUint64(1, true);
}

/** A TransferChecked of either token program, or undefined when the instruction is not one. */
export function readTransferChecked(ix: SvmInstruction): TransferChecked | undefined {
  const programId = ix.programId;
  if (programId !== TOKEN_PROGRAM && programId !== TOKEN_2022_PROGRAM) return undefined;
  if (ix.data.length < 10 || ix.data[0] !== TRANSFER_CHECKED) return undefined;
  const [source, mint, destination, authority, ...signers] = ix.accounts;
  if (source === undefined || mint === undefined || destination === undefined) return undefined;
  if (authority === undefined) return undefined;
  const data = view(ix.data);
  return {
    tokenProgram: programId,
    source,
    mint,
    destination,
    authority,
    signers,
    amount: data.getBigUint64(1, true),
    decimals: data.getUint8(9),
  };
}

export function isMemo(ix: SvmInstruction): boolean {
  return ix.programId === MEMO_PROGRAM;
}

/** A memo's text (UTF-8, invalid bytes replaced as the reference's TextDecoder does). */
export function readMemo(ix: SvmInstruction): string | undefined {
  return isMemo(ix) ? new TextDecoder().decode(ix.data) : undefined;
}

export function isLighthouse(ix: SvmInstruction): boolean {
  return ix.programId === LIGHTHOUSE_PROGRAM;
}

/** The payer as the reference names it: account 4 of the first token-program instruction with 4. */
export function tokenPayer(instructions: readonly SvmInstruction[]): string | undefined {
  for (const ix of instructions) {
    if (isTokenProgram(ix.programId) && ix.accounts.length >= 4) return ix.accounts[3];
  }
  return undefined;
}
