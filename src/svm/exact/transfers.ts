/** TransferChecked instructions, top-level or inner, as the reference's smart-wallet path reads. */
import { getBase58Encoder } from "@solana/kit";
import { associatedTokenAddress } from "./ata.js";
import { TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from "./constants.js";
import type { SvmTransaction } from "./decode.js";
import { isTokenProgram, type TokenTransfer, transferOf } from "./instructions.js";
import type { SvmRequirements } from "./types.js";

const base58 = getBase58Encoder();

/** payTo's associated token account for the asset under either token program. */
export async function payeeAccounts(requirements: SvmRequirements): Promise<Set<string>> {
  const found = new Set<string>();
  for (const program of [TOKEN_PROGRAM, TOKEN_2022_PROGRAM]) {
    const ata = await associatedTokenAddress(requirements.payTo, requirements.asset, program);
    if (ata !== undefined) found.add(ata);
  }
  return found;
}

/** Every TransferChecked the transaction makes: top-level (accounts resolved), then inner. */
export function transfersOf(tx: SvmTransaction, inner: unknown): TokenTransfer[] {
  const topLevel = tx.instructions.flatMap(
    (ix) => transferOf(ix.programId, ix.accounts, ix.data) ?? [],
  );
  return [...topLevel, ...innerTransfers(inner, [...tx.staticAccounts, ...tx.loadedAccounts])];
}

/** TransferChecked among inner instructions: parsed (`jsonParsed`) or compiled (indexes into `keys`). */
export function innerTransfers(inner: unknown, keys: readonly string[]): TokenTransfer[] {
  if (!Array.isArray(inner)) return [];
  const found: TokenTransfer[] = [];
  for (const group of inner) {
    const list = (group as { instructions?: unknown } | null)?.instructions;
    if (!Array.isArray(list)) continue;
    for (const ix of list as Record<string, unknown>[]) {
      const transfer = ix?.parsed ? parsedTransfer(ix) : compiledTransfer(ix, keys);
      if (transfer) found.push(transfer);
    }
  }
  return found;
}

function parsedTransfer(ix: Record<string, unknown>): TokenTransfer | undefined {
  const parsed = ix.parsed as { type?: unknown; info?: Record<string, unknown> } | undefined;
  const programId = String(ix.programId ?? "");
  if (parsed?.type !== "transferChecked" || !parsed.info || !isTokenProgram(programId)) {
    return undefined;
  }
  const info = parsed.info;
  const tokenAmount = info.tokenAmount as { amount?: unknown; decimals?: unknown } | undefined;
  let amount: bigint;
  try {
    amount = BigInt(String(tokenAmount?.amount ?? info.amount ?? "0"));
  } catch {
    return undefined;
  }
  return {
    programId,
    amount,
    source: String(info.source ?? ""),
    mint: String(info.mint ?? ""),
    destination: String(info.destination ?? ""),
    authority: String(info.authority ?? info.owner ?? ""),
    decimals: typeof tokenAmount?.decimals === "number" ? tokenAmount.decimals : undefined,
  };
}

function compiledTransfer(
  ix: Record<string, unknown>,
  keys: readonly string[],
): TokenTransfer | undefined {
  const { programIdIndex, accounts, data } = ix;
  if (typeof programIdIndex !== "number" || !Array.isArray(accounts)) return undefined;
  if (typeof data !== "string") return undefined;
  const programId = keys[programIdIndex];
  if (programId === undefined) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(base58.encode(data));
  } catch {
    return undefined;
  }
  const named = accounts.map((i) => (typeof i === "number" ? keys[i] : undefined));
  if (named.some((key) => key === undefined)) return undefined;
  return transferOf(programId, named as string[], bytes);
}
