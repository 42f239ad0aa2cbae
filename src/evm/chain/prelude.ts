/**
 * Settlements of several transactions: what must land before the payment itself (an EIP-2612
 * permit for our signer, the payer's own signed approval with the gas it lacks). Each is journaled
 * under the settlement's key before it is broadcast and followed to its receipt before the next
 * one goes out, so after a crash between two of them a retry picks each one up where it was:
 * a landed one is not sent again, a journaled one is followed, a lost one is re-sent. Gas we send
 * a payer is journaled under the payer instead, and follows its rules (sponsoring.ts).
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
import type { MaySend } from "../../core/settle-loop.js";
import type { JournalEntry } from "../../core/store.js";
import { FacilitatorError, failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import { isKnown, refusal } from "./broadcast.js";
import { evmEntry } from "./entry.js";
import type { GasNeed } from "./gas-bounds.js";
import { type CallOutcome, type ContractCall, failed, pending, shortText } from "./outcome.js";
import { reconcile } from "./reconcile.js";
import {
  type Funding,
  fundedLanded,
  fundedWasted,
  fundPayer,
  type SponsoringAccess,
} from "./sponsoring.js";
import type { SendingAccess } from "./transactions.js";
import { prepareCall, sendCall } from "./transactions.js";

export interface Prelude {
  /** Unique within the settlement: "permit", "approve". */
  readonly name: string;
  /**
   * Ours (a call from the settling signer) or the payer's signed bytes, with the gas it lacks
   * sent to it first (`fund`: at most what the transaction may cost, as signed).
   */
  readonly tx:
    | {
        readonly call: ContractCall;
        /** What the call does, for the most gas it may be sent with. */
        readonly gas: GasNeed;
      }
    | { readonly raw: Hex; readonly fund?: Funding | undefined };
  /** Whether the chain still lacks what it does; false: it is skipped. */
  readonly needed: (ctx: SendingAccess) => Promise<boolean>;
}

/** Why the preludes stopped: the outcome, and whether the payer is still to be charged for it. */
export interface Stopped {
  readonly outcome: CallOutcome;
  /** The payer's own transaction failed on chain or was refused (its doing, as a revert is). */
  readonly payersFault: boolean;
}

const preludeKey = (key: string, prelude: Prelude) => `${key}#${prelude.name}`;
const POLL_MS = 250;

/**
 * Lands each prelude in turn (from `signer` when it is ours), inside a settle's `send` (with its
 * licence: never in a dry run). Undefined once all have landed; otherwise what stopped them
 * (nothing after it was sent). A payer's failure that wasted gas we sent it is charged here, and
 * is then no longer `payersFault`.
 */
export async function landPreludes(
  ctx: SponsoringAccess,
  key: string,
  preludes: readonly Prelude[],
  signer: Address | undefined,
  may: MaySend,
): Promise<Stopped | undefined> {
  const earlier = await followEarlierFunding(ctx, key, may);
  if (earlier)
    return { outcome: stopAt("the gas sent to the payer before", earlier), payersFault: false };
  for (const prelude of preludes) {
    const stopped = await landPrelude(ctx, preludeKey(key, prelude), prelude, signer, may);
    if (stopped) return stopped;
  }
  return undefined;
}

/**
 * Gas for the payer journaled under the payment (`key#fund`) by a version before the per-payer
 * record: followed to its end before anything else, never sent again. Undefined once it ended.
 */
async function followEarlierFunding(
  ctx: SponsoringAccess,
  key: string,
  may: MaySend,
): Promise<CallOutcome | undefined> {
  const fundKey = `${key}#fund`;
  const entry = await ctx.journal.get(fundKey);
  if (entry?.state !== "broadcast") return undefined;
  const picked = await reconcile(ctx, entry, may);
  // Still pending (or unreachable): the payment waits for it.
  if (picked !== "gone" && (picked.kind === "failed" || picked.kind === "submitted")) return picked;
  const state = picked === "gone" ? "dropped" : picked.kind === "confirmed" ? "answered" : "failed";
  await ctx.journal.recordState(fundKey, state).catch(() => undefined);
  return undefined;
}

async function landPrelude(
  ctx: SponsoringAccess,
  key: string,
  prelude: Prelude,
  signer: Address | undefined,
  may: MaySend,
): Promise<Stopped | undefined> {
  const entry = await ctx.journal.get(key);
  if (entry?.state === "answered") return undefined;
  const tx = prelude.tx;
  if (entry?.state === "broadcast") {
    const picked = "raw" in tx ? await followRaw(ctx, entry) : await reconcile(ctx, entry, may);
    if (picked !== "gone") return landed(ctx, key, picked, prelude);
    await ctx.journal.recordState(key, "dropped").catch(() => undefined);
    // The payer's nonce went to another of its transactions: what we sent it for this is wasted.
    if ("raw" in tx && tx.fund) await fundedWasted(ctx, tx.fund);
  }
  if (!(await prelude.needed(ctx))) return undefined;
  if ("raw" in tx) {
    const unfunded = tx.fund && (await fundPayer(ctx, tx.fund, signer, may));
    if (unfunded) {
      const what = `the gas for the payer's ${prelude.name} transaction, which must land before the payment`;
      return { outcome: stopAt(what, unfunded), payersFault: false };
    }
    return landed(ctx, key, await sendRaw(ctx, key, tx.raw), prelude);
  }
  const prepared = await prepareCall(ctx, tx.call, { reuse: false }, tx.gas, { signer });
  if ("kind" in prepared) return { outcome: stopAt(whatOf(prelude), prepared), payersFault: false };
  const outcome = await sendCall(ctx, prepared, "confirmed", { key });
  return landed(ctx, key, outcome, prelude);
}

/** Undefined when the prelude's transaction succeeded; else the outcome, said as the prelude's. */
async function landed(
  ctx: SponsoringAccess,
  key: string,
  outcome: CallOutcome,
  prelude: Prelude,
): Promise<Stopped | undefined> {
  const fund = "raw" in prelude.tx ? prelude.tx.fund : undefined;
  if (outcome.kind === "confirmed") {
    await ctx.journal.recordState(key, "answered").catch(() => undefined);
    if (fund) await fundedLanded(ctx, fund);
    return undefined;
  }
  const stopped = stopAt(whatOf(prelude), outcome);
  const refused =
    stopped.kind === "failed" &&
    stopped.failure.code === "settlement_failed" &&
    stopped.failure.status !== 500;
  if (!("raw" in prelude.tx) || !refused) return { outcome: stopped, payersFault: false };
  // Charged with what we sent for it, if we did; else as a revert of the payer's costing nothing.
  const charged = fund ? await fundedWasted(ctx, fund) : false;
  return { outcome: stopped, payersFault: !charged };
}

const whatOf = (prelude: Prelude) =>
  `the ${prelude.name} transaction that must land before the payment`;

function stopAt(what: string, outcome: CallOutcome): CallOutcome {
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
      { key, network: caip2(ctx.chainId), signer: from, txNonce: nonce },
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
  return awaitReceipt(ctx, key, hash, from, nonce);
}

/** Picks up the payer's journaled transaction: its receipt, or the same bytes again if lost. */
async function followRaw(
  ctx: SendingAccess,
  journaled: JournalEntry,
): Promise<CallOutcome | "gone"> {
  const entry = evmEntry(journaled);
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
    return awaitReceipt(ctx, entry.key, hash, entry.signer, entry.txNonce);
  } catch (error) {
    return pending(
      hash,
      `cannot reach the chain to follow the payer's transaction (${shortText(error)})`,
    );
  }
}

/**
 * Waits for the payer's transaction: its receipt, or its end when the payer's nonce went to
 * another transaction of its own (a replacement in the pool: it can never land).
 */
async function awaitReceipt(
  ctx: SendingAccess,
  key: string,
  hash: Hex,
  from: Address,
  nonce: number,
): Promise<CallOutcome> {
  const deadline = Date.now() + ctx.confirmTimeoutMs;
  const receiptOf = () => ctx.client.getTransactionReceipt({ hash }).catch(() => undefined);
  while (Date.now() < deadline) {
    const receipt = await receiptOf();
    if (receipt) return receiptOutcome(receipt);
    const used = await ctx.client.getTransactionCount({ address: from }).catch(() => 0);
    if (used > nonce) {
      // Mined between the two reads, or replaced.
      const late = await receiptOf();
      if (late) return receiptOutcome(late);
      await ctx.journal.recordState(key, "dropped").catch(() => undefined);
      return failed(
        failure(
          "settlement_failed",
          `the payer's transaction ${hash} can never land: its nonce ${nonce} went to another transaction of the payer's`,
        ),
        hash,
      );
    }
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
