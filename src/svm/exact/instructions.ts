/** Readers of an `exact` transaction's instructions (trailing bytes tolerated, as upstream). */
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
const TRANSFER_CHECKED = 12;

export type TokenProgram = typeof TOKEN_PROGRAM | typeof TOKEN_2022_PROGRAM;

/** A TransferChecked of either token program, top-level or inner. */
export interface TokenTransfer {
  readonly programId: TokenProgram;
  readonly source: string;
  readonly mint: string;
  readonly destination: string;
  /** The owner (or delegate, or multisig) that authorises the transfer: the payer. */
  readonly authority: string;
  readonly amount: bigint;
  /** Undefined when the data ends before it (the smart-wallet path reads 9 bytes, as the reference). */
  readonly decimals?: number | undefined;
}

/** What the compute-budget readers look at (the devnet reads compiled messages with them). */
type BudgetInstruction = Pick<SvmInstruction, "programId" | "data">;

function view(data: Uint8Array): DataView {
  return new DataView(data.buffer, data.byteOffset, data.byteLength);
}

export function isTokenProgram(programId: string): programId is TokenProgram {
  return programId === TOKEN_PROGRAM || programId === TOKEN_2022_PROGRAM;
}

/** SetComputeUnitLimit's units, or undefined when the instruction is not one. */
export function readComputeUnitLimit(ix: BudgetInstruction): number | undefined {
  if (ix.programId !== COMPUTE_BUDGET_PROGRAM || ix.data[0] !== SET_COMPUTE_UNIT_LIMIT) return;
  return ix.data.length < 5 ? undefined : view(ix.data).getUint32(1, true);
}

/** SetComputeUnitPrice's micro-lamports per unit, or undefined when the instruction is not one. */
export function readComputeUnitPrice(ix: BudgetInstruction): bigint | undefined {
  if (ix.programId !== COMPUTE_BUDGET_PROGRAM || ix.data[0] !== SET_COMPUTE_UNIT_PRICE) return;
  return ix.data.length < 9 ? undefined : view(ix.data).getBigUint64(1, true);
}

/** A TransferChecked from its program, accounts and data (9 bytes and 4 accounts at least). */
export function transferOf(
  programId: string,
  accounts: readonly string[],
  data: Uint8Array,
): TokenTransfer | undefined {
  if (!isTokenProgram(programId) || data[0] !== TRANSFER_CHECKED || data.length < 9) return;
  if (accounts.length < 4) return undefined;
  const [source, mint, destination, authority] = accounts as [string, string, string, string];
  return {
    programId,
    source,
    mint,
    destination,
    authority,
    amount: view(data).getBigUint64(1, true),
    decimals: data.length >= 10 ? view(data).getUint8(9) : undefined,
  };
}

/** A whole TransferChecked (its decimals too), as the static layout takes it. */
export function readTransferChecked(ix: SvmInstruction) {
  const transfer = transferOf(ix.programId, ix.accounts, ix.data);
  if (transfer?.decimals === undefined) return undefined;
  const { programId, ...rest } = transfer;
  return { ...rest, tokenProgram: programId, decimals: transfer.decimals };
}

/** A memo's text (UTF-8, invalid bytes replaced as the reference's TextDecoder does). */
export function readMemo(ix: SvmInstruction): string | undefined {
  return ix.programId === MEMO_PROGRAM ? new TextDecoder().decode(ix.data) : undefined;
}

/** Memos and Lighthouse assertions: what may follow the transfer. */
export function isMemoOrLighthouse(ix: SvmInstruction): boolean {
  return ix.programId === MEMO_PROGRAM || ix.programId === LIGHTHOUSE_PROGRAM;
}

/** The payer as the reference names it: account 4 of the first token-program instruction with 4. */
export function tokenPayer(instructions: readonly SvmInstruction[]): string | undefined {
  return instructions.find((ix) => isTokenProgram(ix.programId) && ix.accounts.length >= 4)
    ?.accounts[3];
}
