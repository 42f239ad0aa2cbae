/** What sending a settlement transaction came to, and helpers making node errors one-line failures. */
import { concatHex, type Hex, type TransactionReceipt } from "viem";
import { FacilitatorError, type Failure, failure } from "../../protocol/errors.js";
import { firstLine } from "../../protocol/words.js";
import { isUnreachable } from "../../rpc/rpc.js";

export interface ContractCall {
  readonly to: `0x${string}`;
  readonly data: Hex;
  /** Appended to `data` when it is sent (an ERC-8021 builder code: chain/builder-code.ts). */
  readonly suffix?: Hex | undefined;
}

export const sentData = (call: ContractCall): Hex =>
  call.suffix ? concatHex([call.data, call.suffix]) : call.data;

export type CallOutcome =
  /** Signed, and checked against the latest block; not broadcast. */
  | { readonly kind: "simulated"; readonly hash: Hex }
  | { readonly kind: "submitted"; readonly hash: Hex }
  | { readonly kind: "confirmed"; readonly hash: Hex; readonly receipt: TransactionReceipt }
  /** The call would revert: nothing was broadcast. */
  | { readonly kind: "would-revert"; readonly reason: string | undefined; readonly detail: string }
  /** Mined, and reverted; `outOfGas` when it used all the gas it had (our estimate, not the payer). */
  | {
      readonly kind: "reverted";
      readonly hash: Hex;
      readonly receipt: TransactionReceipt;
      readonly outOfGas: boolean;
    }
  /** Anything else: no key, fee cap, node refusal, unreachable RPC, no receipt in time. */
  | { readonly kind: "failed"; readonly failure: Failure; readonly hash?: Hex | undefined };

export function shortText(error: unknown): string {
  if (error instanceof Error) {
    return firstLine((error as { shortMessage?: string }).shortMessage ?? error.message);
  }
  return String(error);
}

/** What the node itself said (viem's details), else the error's first line. */
export function nodeSaid(error: unknown): string {
  const details = error instanceof Error ? (error as { details?: string }).details : undefined;
  return (details && firstLine(details)) || shortText(error);
}

/** Everything the node says about a transaction, details included, for matching its refusals. */
export function fullText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const details = (error as { details?: string }).details ?? "";
  return `${error.message}\n${details}`;
}

export function failed(f: Failure, hash?: Hex): CallOutcome {
  return { kind: "failed", failure: f, hash };
}

export function infrastructure(error: unknown, doing: string): CallOutcome {
  if (isUnreachable(error)) {
    return failed(failure("chain_unavailable", `${doing}: ${shortText(error)}`));
  }
  return failed(failure("settlement_failed", `${doing}: ${shortText(error)}`, { status: 500 }));
}

/** The journal could not be written, so nothing was sent; an unreachable store is a retryable 503. */
export function unjournaled(error: unknown): CallOutcome {
  if (error instanceof FacilitatorError) return failed(error.failure);
  const why = `cannot write the settlement journal: ${shortText(error)}`;
  return failed(failure("settlement_failed", why, { status: 500 }));
}

export function pending(hash: Hex, why: string): CallOutcome {
  return failed(failure("settlement_pending", why), hash);
}
