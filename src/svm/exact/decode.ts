/** A base64 wire transaction -> a plain view of its message (lookup accounts as placeholders). */
import {
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from "@solana/kit";
import { TRANSACTION_VERSIONS } from "./constants.js";

export interface SvmInstruction {
  /** The instruction's position in the message. */
  readonly index: number;
  readonly programId: string;
  /** Indexes into `staticAccounts`. */
  readonly accountIndexes: readonly number[];
  /** The account keys those indexes name. */
  readonly accounts: readonly string[];
  readonly data: Uint8Array;
}

/** One address lookup table a v0 message uses, and the indexes into it that it loads. */
export interface SvmLookup {
  readonly table: string;
  readonly writableIndexes: readonly number[];
  readonly readonlyIndexes: readonly number[];
}

export interface SvmTransaction {
  /** Signers: the first `numSignerAccounts` static keys (the fee payer is key 0). */
  readonly header: { readonly numSignerAccounts: number };
  readonly staticAccounts: readonly string[];
  readonly recentBlockhash: string;
  readonly instructions: readonly SvmInstruction[];
  /** One entry per required signer, in key order; null where the signature is still empty. */
  readonly signatures: readonly {
    readonly signer: string;
    readonly signature: Uint8Array | null;
  }[];
  /** The bytes every signature signs. */
  readonly messageBytes: Uint8Array;
  /** Address lookup tables the message uses (v0 messages); 0 for none. */
  readonly lookupTableCount: number;
  /** Those tables' lookups, in the message's order. */
  readonly lookups: readonly SvmLookup[];
  /** Accounts loaded through the tables: all writable, then all read-only. Empty until resolved. */
  readonly loadedAccounts: readonly string[];
}

export type DecodeResult =
  | { readonly ok: true; readonly transaction: SvmTransaction }
  | {
      readonly ok: false;
      readonly message: string;
      /** Set when the message is of a version not taken here: that version. */
      readonly unsupportedVersion?: number;
    };

/** What an account resolved through an address lookup table reads as (no chain to resolve it). */
export const LOOKUP_TABLE_ACCOUNT = "(address lookup table)";

const transactionDecoder = getTransactionDecoder();
const messageDecoder = getCompiledTransactionMessageDecoder();

/** Decodes a base64 wire transaction; never throws. */
export function decodeSvmTransaction(base64: unknown): DecodeResult {
  if (typeof base64 !== "string" || base64.length === 0) {
    return { ok: false, message: "The transaction must be a non-empty base64 string" };
  }
  try {
    const bytes = getBase64Encoder().encode(base64);
    const version = messageVersionOf(bytes);
    if (typeof version === "number" && !TRANSACTION_VERSIONS.includes(version)) {
      return {
        ok: false,
        unsupportedVersion: version,
        message: `The transaction is a version ${version} message; this facilitator takes version ${TRANSACTION_VERSIONS.join(", ")} messages (extra.transactionVersions on /supported) and, from older clients, legacy ones`,
      };
    }
    const wire = transactionDecoder.decode(bytes);
    const messageBytes = Uint8Array.from(wire.messageBytes);
    const compiled = messageDecoder.decode(messageBytes);
    // Not reached: a message of another layout has another version, refused above.
    if (!("instructions" in compiled)) throw new Error(`version ${compiled.version} message`);
    const staticAccounts = compiled.staticAccounts.map(String);
    const lookups = "addressTableLookups" in compiled ? compiled.addressTableLookups : undefined;
    const tableLookups: SvmLookup[] = (lookups ?? []).map((lookup) => ({
      table: String(lookup.lookupTableAddress),
      writableIndexes: [...lookup.writableIndexes],
      readonlyIndexes: [...lookup.readonlyIndexes],
    }));
    const { header } = compiled;
    if (staticAccounts.length === 0 || header.numSignerAccounts === 0) {
      return { ok: false, message: "The transaction has no fee payer" };
    }
    if (header.numSignerAccounts > staticAccounts.length) {
      return { ok: false, message: "The transaction's header names more signers than keys" };
    }
    const instructions: SvmInstruction[] = [];
    for (const [index, ix] of (compiled.instructions ?? []).entries()) {
      const programId = staticAccounts[ix.programAddressIndex];
      if (programId === undefined) {
        return { ok: false, message: `Instruction ${index} names a program past the static keys` };
      }
      const accountIndexes = [...(ix.accountIndices ?? [])];
      // Past the static keys: loaded through a lookup table, if the message uses one.
      const past = accountIndexes.some((i) => staticAccounts[i] === undefined);
      if (past && tableLookups.length === 0) {
        return { ok: false, message: `Instruction ${index} names an account past the static keys` };
      }
      const accounts = accountIndexes.map((i) => staticAccounts[i] ?? LOOKUP_TABLE_ACCOUNT);
      instructions.push({
        index,
        programId,
        accountIndexes,
        accounts,
        data: Uint8Array.from(ix.data ?? []),
      });
    }
    const signatures = staticAccounts.slice(0, header.numSignerAccounts).map((signer) => {
      const signature = (wire.signatures as Record<string, Uint8Array | null>)[signer];
      return { signer, signature: signature ? Uint8Array.from(signature) : null };
    });
    return {
      ok: true,
      transaction: {
        header,
        staticAccounts,
        recentBlockhash: String(compiled.lifetimeToken),
        instructions,
        signatures,
        messageBytes,
        lookupTableCount: tableLookups.length,
        lookups: tableLookups,
        loadedAccounts: [],
      },
    };
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { ok: false, message: `The transaction could not be decoded: ${detail}` };
  }
}

/** The message's version: SIMD-0385 starts with it, else it follows the signatures (high bit set). */
export function messageVersionOf(wire: ArrayLike<number>): "legacy" | number | undefined {
  const first = wire[0];
  if (first === undefined) return undefined;
  if (first & 0x80) return first & 0x7f;
  const version = wire[1 + first * 64];
  if (version === undefined) return undefined;
  return version & 0x80 ? version & 0x7f : "legacy";
}
