/** What verify and settle answer, whatever the chain: the payer, the transaction, or why not. */
import type { Failure } from "./errors.js";

/** What a success carries besides its payer. */
interface Carried {
  /** Scheme facts the answer carries (a batch-settlement channel's on-chain state). */
  readonly extra?: Readonly<Record<string, unknown>> | undefined;
  /** What became of the payment's extensions, per extension (the EXTENSION-RESPONSES header). */
  readonly extensionResponses?: Readonly<Record<string, unknown>> | undefined;
}

export type VerifyResult =
  | ({ readonly ok: true; readonly payer: string } & Carried)
  | { readonly ok: false; readonly failure: Failure; readonly payer?: string | undefined };

export type SettleResult =
  | ({
      readonly ok: true;
      readonly payer: string;
      /** A 0x hash (EVM) or base58 signature (Solana); empty when nothing moved (`upto` of zero). */
      readonly transactionHash: string;
      /** What was settled, for schemes that settle less than was signed (`upto`). */
      readonly amount?: string | undefined;
    } & Carried)
  | {
      readonly ok: false;
      readonly failure: Failure;
      readonly payer?: string | undefined;
      /** Set whenever a transaction was signed: a broadcast hash is never dropped. */
      readonly transactionHash?: string | undefined;
    };
