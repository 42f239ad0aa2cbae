/**
 * Settlements of several transactions: what must land before the payment itself (an EIP-2612
 * permit for our signer, gas for the payer, the payer's own signed approval). Each is journaled
 * under the settlement's key before it is broadcast and followed to its receipt before the next
 * one goes out, so after a crash between two of them a retry picks each one up where it was:
 * a landed one is not sent again, a journaled one is followed, a lost one is re-sent.
 */
import {
  type Address,
  type Hex,
  keccak256,
  parseTransaction,
  recoverTransactionAddress,
  type TransactionSerialized,
} from "viem";
import { isUnreachable } from "../../core/rpc.js";
import type { JournalEntry } from "../../core/store.js";
import { FacilitatorError, failure } from "../../protocol/errors.js";
import { isKnown, refusal } from "./broadcast.js";
import type { GasNeed } from "./gas-bounds.js";
import { type CallOutcome, type ContractCall, failed, pending, shortText } from "./outcome.js";
import { reconcile } from "./reconcile.js";
import type { SendingAccess } from "./transactions.js";
import { prepareCall, sendCall } from "./transactions.js";

export interface Prelude {
  /** Unique within the settlement: "permit", "fund", "approve". */
  readonly name: string;
  /** Ours (a call from the settling signer, with a value if any) or the payer's signed bytes. */
  readonly tx:
    | {
        readonly call: ContractCall;
        /** What the call does, for the most gas it may be sent with. */
        readonly gas: GasNeed;
        /** Ether sent along, worked out when it is sent. */
        readonly value?: ((ctx: SendingAccess) => Promise<bigint>) | undefined;
      }
    | { readonly raw: Hex };
  /** Whether the chain still lacks what it does; false: it is skipped. */
  readonly needed: (ctx: SendingAccess) => Promise<boolean>;
}

const preludeKey = (key: string, prelude: Prelude) => `${key}#${prelude.name}`;
const POLL_MS = 250;

/**
 * Lands each prelude in turn (from `signer` when it is ours). Undefined once all have landed;
 * otherwise the outcome that stopped them (nothing after it was sent), and whether the payer's
 * own transaction failed on chain or was refused (its doing, as a revert is).
 */
export async function landPreludes(
  ctx: SendingAccess,
  key: string,
  preludes: readonly Prelude[],
  signer: Address | undefined,
): Promise<{ readonly outcome: CallOutcome; readonly payersFault: boolean } | undefined> {
  for (const prelude of preludes) {
    const stopped = await landPrelude(ctx, preludeKey(key, prelude), prelude, signer);
    if (stopped) {
      const refused =
        stopped.kind === "failed" &&
        stopped.failure.code === "settlement_failed" &&
        stopped.failure.status !== 500;
      return { outcome: stopped, payersFault: "raw" in prelude.tx && refused };
    }
  }
  return undefined;
}

async function landPrelude(
  ctx: SendingAccess,
  key: string,
  prelude: Prelude,
  signer: Address | undefined,
): Promise<CallOutcome | undefined> {
  const entry = await ctx.journal.get(key);
  if (entry?.state === "answered") return undefined;
  if (entry?.state === "broadcast") {
    const picked = "raw" in prelude.tx ? await followRaw(ctx, entry) : await reconcile(ctx, entry);
    if (picked !== "gone") return landed(ctx, key, picked, prelude);
    await ctx.journal.recordState(key, "dropped").catch(() => undefined);
  }
  if (!(await prelude.needed(ctx))) return undefined;
  if ("raw" in prelude.tx)
    return landed(ctx, key, await sendRaw(ctx, key, prelude.tx.raw), prelude);
  const { call, value, gas } = prelude.tx;
  const options = { signer, value: value ? await value(ctx) : undefined };
  const prepared = await prepareCall(ctx, call, { reuse: false }, gas, options);
  if ("kind" in prepared) return stopAt(prelude, prepared);
  const outcome = await sendCall(ctx, prepared, "confirmed", { key });
  return landed(ctx, key, outcome, prelude);
}

/** Undefined when the prelude's transaction succeeded; else the outcome, said as the prelude's. */
async function landed(
  ctx: SendingAccess,
  key: string,
  outcome: CallOutcome,
  prelude: Prelude,
): Promise<CallOutcome | undefined> {
  if (outcome.kind === "confirmed") {
    await ctx.journal.recordState(key, "answered").catch(() => undefined);
    return undefined;
  }
  return stopAt(prelude, outcome);
}

function stopAt(prelude: Prelude, outcome: CallOutcome): CallOutcome {
  const what = `the ${prelude.name} transaction that must land before the payment`;
  switch (outcome.kind) {
    case "would-revert":
      return failed(
        failure("simulation_failed", `${what} would revert: ${outcome.reason ?? outcome.detail}`),
      );
    case "reverted":
      return failed(failure("settlement_failed", `${what} reverted on chain`), outcome.hash);
    case "failed":
      return failed(
        { ...outcome.failure, message: `${what}: ${outcome.failure.message}` },
        outcome.hash,
      );
    default:
      return outcome;
  }
}

/** Journals the payer's signed transaction, broadcasts it and waits for its receipt. */
async function sendRaw(ctx: SendingAccess, key: string, raw: Hex): Promise<CallOutcome> {
  const hash = keccak256(raw);
  let from: Address;
  let nonce: number;
  try {
    from = await recoverTransactionAddress({ serializedTransaction: raw as TransactionSerialized });
    nonce = parseTransaction(raw).nonce ?? 0;
  } catch (error) {
    return failed(
      failure("invalid_request", `the signed transaction cannot be read: ${shortText(error)}`),
    );
  }
  try {
    await ctx.journal.recordSend(
      { key, chainId: ctx.chainId, signer: from, txNonce: nonce },
      hash,
      raw,
    );
  } catch (error) {
    // The store unreachable (or the journal's disk full) is a retryable 503: nothing was sent.
    if (error instanceof FacilitatorError) return failed(error.failure);
    return failed(
      failure("settlement_failed", `cannot write the settlement journal: ${shortText(error)}`, {
        status: 500,
      }),
    );
  }
  try {
    await ctx.client.sendRawTransaction({ serializedTransaction: raw });
  } catch (error) {
    if (isUnreachable(error))
      return pending(hash, `the broadcast's answer was lost (${shortText(error)})`);
    if (refusal(error) !== "known") {
      void ctx.journal.recordState(key, "failed").catch(() => undefined);
      return failed(
        failure(
          "settlement_failed",
          `the node refused the payer's transaction: ${shortText(error)}`,
        ),
      );
    }
  }
  return awaitReceipt(ctx, hash);
}

/** Picks up the payer's journaled transaction: its receipt, or the same bytes again if lost. */
async function followRaw(ctx: SendingAccess, entry: JournalEntry): Promise<CallOutcome | "gone"> {
  const hash = entry.hashes[0] as Hex;
  const raw = entry.raws[0];
  try {
    const receipt = await ctx.client.getTransactionReceipt({ hash }).catch(() => undefined);
    if (receipt) return receiptOutcome(receipt);
    if (!(await isKnown(ctx, hash))) {
      const used = await ctx.client.getTransactionCount({ address: entry.signer });
      if (used > entry.txNonce || !raw) return "gone";
      await ctx.client.sendRawTransaction({ serializedTransaction: raw }).catch(() => undefined);
    }
    return awaitReceipt(ctx, hash);
  } catch (error) {
    return pending(
      hash,
      `cannot reach the chain to follow the payer's transaction (${shortText(error)})`,
    );
  }
}

async function awaitReceipt(ctx: SendingAccess, hash: Hex): Promise<CallOutcome> {
  const deadline = Date.now() + ctx.confirmTimeoutMs;
  while (Date.now() < deadline) {
    const receipt = await ctx.client.getTransactionReceipt({ hash }).catch(() => undefined);
    if (receipt) return receiptOutcome(receipt);
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, ctx.receiptPollMs)));
  }
  return pending(
    hash,
    "the payer's transaction was broadcast and is not mined yet; retry to reconcile",
  );
}

function receiptOutcome(
  receipt: Awaited<ReturnType<SendingAccess["client"]["getTransactionReceipt"]>>,
): CallOutcome {
  return receipt.status === "success"
    ? { kind: "confirmed", hash: receipt.transactionHash, receipt }
    : { kind: "reverted", hash: receipt.transactionHash, receipt, outOfGas: false };
}
