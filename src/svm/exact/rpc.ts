/** The Solana JSON-RPC calls of `exact`; an unreachable node's errors are thrown as they are. */
import type { Client } from "viem";
import type { MaySend } from "../../core/settle-loop.js";
import { firstLine } from "../../protocol/words.js";
import { isUnreachable } from "../../rpc/rpc.js";

export type Commitment = "processed" | "confirmed" | "finalized";

export interface SignatureStatus {
  readonly slot: bigint;
  /** The runtime's error, or null when the transaction succeeded. */
  readonly err: unknown;
  /** At `confirmed` commitment or deeper (a `processed` one may still be dropped). */
  readonly confirmed: boolean;
}

function call<T>(client: Client, method: string, params: unknown[]): Promise<T> {
  return client.request({ method, params } as never) as Promise<T>;
}

/** A simulation's answer; a failure's `err` is the runtime's (undefined: the node refused the call). */
export type Simulation =
  | { readonly ok: true; readonly innerInstructions: unknown }
  | { readonly ok: false; readonly err?: unknown; readonly text: string };
export type SimulationFailure = Extract<Simulation, { ok: false }>;

/** Simulates `transaction`: a refusal by the node counts as failed; an unreachable node throws. */
export async function simulate(
  client: Client,
  transaction: string,
  options: { sigVerify: boolean; commitment: Commitment; innerInstructions?: boolean },
): Promise<Simulation> {
  let answer: { value?: { err?: unknown; logs?: unknown; innerInstructions?: unknown } };
  try {
    answer = await call(client, "simulateTransaction", [
      transaction,
      { encoding: "base64", replaceRecentBlockhash: false, ...options },
    ]);
  } catch (error) {
    if (isUnreachable(error)) throw error;
    return { ok: false, text: nodeRefusal(error) };
  }
  const err = answer?.value?.err;
  if (err !== null && err !== undefined) {
    return { ok: false, err, text: describeTransactionError(err, answer.value?.logs) };
  }
  return { ok: true, innerInstructions: answer?.value?.innerInstructions ?? null };
}

/** What the node said when it answered with an error, in one line. */
export function nodeRefusal(error: unknown): string {
  const text = error instanceof Error ? (error as { details?: string }).details : undefined;
  return text ?? firstLine(error);
}

/** A runtime error in a few words: `{"InstructionError":[2,{"Custom":1}]}`, named when known. */
export function describeTransactionError(err: unknown, logs?: unknown): string {
  const text = JSON.stringify(err);
  const logLines = Array.isArray(logs) ? logs.filter((l) => typeof l === "string") : [];
  const named = logLines.find((line) => /Error: /.test(line))?.replace(/^Program log: /, "");
  if (named) return `${text} (${named})`;
  if (err === "BlockhashNotFound") return `${text} (the blockhash has expired or is unknown)`;
  if (err === "AlreadyProcessed") return `${text} (this transaction already landed)`;
  return text;
}

/** Sends a signed transaction (no preflight: we simulated), only with the settle loop's licence. */
export function sendTransaction(
  client: Client,
  transaction: string,
  _may: MaySend,
): Promise<string> {
  return call(client, "sendTransaction", [
    transaction,
    { encoding: "base64", skipPreflight: true, maxRetries: 0 },
  ]);
}

/** An unseen transaction: the same bytes again while its blockhash is valid, else seen late or expired. */
export async function resendUnseen(
  client: Client,
  signature: string,
  blockhash: string | undefined,
  wire: string | undefined,
  may: MaySend,
): Promise<"sent" | "seen" | "expired"> {
  if (wire && blockhash && (await isBlockhashValid(client, blockhash))) {
    // The node may have dropped it; the chain takes one id once.
    await sendTransaction(client, wire, may).catch((error: unknown) => {
      if (isUnreachable(error)) throw error;
    });
    return "sent";
  }
  const [late] = await signatureStatuses(client, [signature], true);
  return late ? "seen" : "expired";
}

/** The statuses of `signatures` (null: the node knows no such transaction). */
export async function signatureStatuses(
  client: Client,
  signatures: readonly string[],
  searchHistory = false,
): Promise<(SignatureStatus | null)[]> {
  if (signatures.length === 0) return [];
  const answer = await call<{ value?: unknown[] }>(client, "getSignatureStatuses", [
    signatures,
    { searchTransactionHistory: searchHistory },
  ]);
  return signatures.map((_, i) => {
    const entry = answer?.value?.[i] as
      | { slot?: unknown; err?: unknown; confirmationStatus?: unknown }
      | null
      | undefined;
    if (!entry || (typeof entry.slot !== "number" && typeof entry.slot !== "bigint")) return null;
    const { confirmationStatus } = entry;
    return {
      slot: BigInt(entry.slot),
      err: entry.err ?? null,
      confirmed: confirmationStatus === "confirmed" || confirmationStatus === "finalized",
    };
  });
}

/** Whether a transaction with this blockhash may still land. */
export async function isBlockhashValid(client: Client, blockhash: string): Promise<boolean> {
  const answer = await call<{ value?: unknown }>(client, "isBlockhashValid", [
    blockhash,
    { commitment: "processed" },
  ]);
  return answer?.value === true;
}

/** A token account's balance in atomic units, and the slot it was read at. */
export async function tokenBalance(
  client: Client,
  account: string,
): Promise<{ readonly amount: bigint; readonly slot: bigint }> {
  const answer = await call<{ context?: { slot?: number }; value?: { amount?: string } }>(
    client,
    "getTokenAccountBalance",
    [account, { commitment: "processed" }],
  );
  const amount = answer?.value?.amount;
  const slot = answer?.context?.slot;
  if (typeof amount !== "string" || !/^\d+$/.test(amount) || typeof slot !== "number") {
    throw new Error(`getTokenAccountBalance answered no balance for ${account}`);
  }
  return { amount: BigInt(amount), slot: BigInt(slot) };
}

/** An account's SOL in lamports, at `confirmed` (0 for an account that does not exist). */
export async function lamportsOf(client: Client, address: string): Promise<bigint> {
  const answer = await call<{ value?: number | string }>(client, "getBalance", [
    address,
    { commitment: "confirmed" },
  ]);
  return BigInt(answer?.value ?? 0);
}

/** A confirmed transaction from getTransaction: base64 `wire`, and the accounts its tables loaded. */
export async function confirmedTransaction(client: Client, signature: string) {
  const answer = await call<{
    transaction?: unknown;
    meta?: { err?: unknown; innerInstructions?: unknown; loadedAddresses?: unknown } | null;
  } | null>(client, "getTransaction", [
    signature,
    { encoding: "base64", commitment: "confirmed", maxSupportedTransactionVersion: 0 },
  ]);
  const wire = Array.isArray(answer?.transaction) ? answer.transaction[0] : undefined;
  if (!answer || typeof wire !== "string" || !answer.meta) return null;
  const loaded = answer.meta.loadedAddresses as { writable: unknown; readonly: unknown } | null;
  return {
    wire,
    err: answer.meta.err ?? null,
    innerInstructions: answer.meta.innerInstructions ?? null,
    loadedAddresses: loaded ?? undefined,
  };
}
