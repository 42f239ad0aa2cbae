/**
 * Picking a journaled settlement back up, and checking a journaled success against the chain
 * before it is repeated to anyone (a reorg may have dropped it).
 */
import {
  type Hex,
  keccak256,
  parseTransaction,
  type TransactionReceipt,
  type TransactionSerializable,
} from "viem";
import type { MaySend } from "../../core/settle-loop.js";
import type { JournalEntry } from "../../core/store.js";
import { type Failure, failure } from "../../protocol/errors.js";
import { isUnreachable } from "../../rpc/rpc.js";
import { isKnown, refusal, sendRaw } from "./broadcast.js";
import { type EvmEntry, evmEntry } from "./entry.js";
import { feesOf } from "./fees.js";
import { follow, mined } from "./follow.js";
import { type CallOutcome, failed, pending, shortText } from "./outcome.js";
import { type SignerLane, stillSucceeds } from "./signers.js";
import type { SendingAccess } from "./transactions.js";

/**
 * What one node says of a journaled settlement: a receipt of any of its hashes, which of them it
 * has (pending or mined), and whether it has seen the signer's nonce used. Read together (one
 * batch), so the answers are of one head: a read replica that lags has neither the receipt nor the
 * transaction of a block it has not seen, and it has not seen the nonce used either.
 */
/** Block timestamps are whole seconds and clocks differ a little: a head this far past counts. */
const LAG_MARGIN_MS = 2_000;

async function lookUp(ctx: SendingAccess, entry: EvmEntry) {
  const [receipts, known, used] = await Promise.all([
    Promise.all(
      entry.hashes.map((hash) =>
        ctx.client.getTransactionReceipt({ hash }).catch((error: unknown): undefined => {
          if (isUnreachable(error)) throw error;
          return undefined;
        }),
      ),
    ),
    Promise.all(entry.hashes.map((hash) => isKnown(ctx, hash))),
    ctx.client.getTransactionCount({ address: entry.signer, blockTag: "latest" }),
  ]);
  return {
    receipt: receipts.find((r) => r !== undefined),
    inPool: entry.hashes.find((_, i) => known[i]),
    /** The node has seen the nonce used: by ours, if it has our receipt; else by another. */
    nonceUsed: used > entry.txNonce,
  };
}

/**
 * Sends signed bytes again inside the signer's lane: "sent" (the node took them), "known" (it has
 * them), or "used" (it has the nonce used: a node that reads behind it may not have seen that).
 */
async function resend(
  ctx: SendingAccess,
  lane: SignerLane,
  nonce: number,
  raw: Hex,
  may: MaySend,
): Promise<"sent" | "known" | "used" | "refused"> {
  return lane.exclusive(async () => {
    try {
      await sendRaw(ctx, raw, may);
      lane.observe(ctx.chainId, nonce);
      lane.remember(ctx.chainId, nonce, raw);
      return "sent";
    } catch (error) {
      if (isUnreachable(error)) throw error;
      const why = refusal(error);
      if (why === "known" || why === "nonce") lane.observe(ctx.chainId, nonce);
      return why === "known" ? "known" : why === "nonce" ? "used" : "refused";
    }
  });
}

/** The newest signed bytes of the entry, from the lane or the store, if they are its own. */
function bytesOf(lane: SignerLane | undefined, ctx: SendingAccess, entry: EvmEntry) {
  const raw = lane?.recentRaw(ctx.chainId, entry.txNonce) ?? entry.raws.at(-1);
  return raw !== undefined && entry.hashes.includes(keccak256(raw)) ? raw : undefined;
}

/**
 * Picks a journaled settlement back up: its receipt if mined; otherwise wait for it (replacing it
 * if stuck); if the node lost it and its nonce is still free, broadcast the same bytes again.
 * "gone" means the transaction can never land (its nonce went to another): start afresh.
 */
export async function reconcile(
  ctx: SendingAccess,
  journaled: JournalEntry,
  may: MaySend,
): Promise<CallOutcome | "gone"> {
  const entry = evmEntry(journaled);
  const lane = ctx.signers.byAddress(entry.signer);
  const newest = entry.hashes[entry.hashes.length - 1] as Hex;
  try {
    const newestRaw = entry.raws[entry.raws.length - 1];
    const tx = newestRaw ? (parseTransaction(newestRaw) as TransactionSerializable) : undefined;
    const seen = await lookUp(ctx, entry);
    if (seen.receipt) return mined(ctx, entry.key, seen.receipt, tx?.gas);
    if (!tx || !newestRaw) return "gone";
    if (!seen.inPool) {
      // Gone only by the word of a node that has seen its nonce used (a lagging one has not).
      if (seen.nonceUsed) return "gone";
      // Any replica can follow a settlement by its hash; only the key's holder can send it again.
      if (!lane) return notOurs(entry, newest, "is not in the node's pool and its nonce is free");
      // Only while it can still land: sent again after its authorization expired (or was used
      // elsewhere), it would revert at our cost.
      if (!(await stillSucceeds(ctx, lane.address, newestRaw))) {
        return {
          kind: "would-revert",
          reason: undefined,
          detail: "it would revert if sent again (its authorization expired, or was used)",
        };
      }
      // Lost before it reached a node, or dropped from the pool: the same bytes again. A node
      // that has the nonce used while the one read from has not seen it: it is followed there.
      if ((await resend(ctx, lane, entry.txNonce, newestRaw, may)) === "refused") return "gone";
    }
    if (!lane) return notOurs(entry, newest, "is still pending");
    return follow(ctx, lane, entry.key, [...entry.hashes], tx, feesOf(tx), may);
  } catch (error) {
    return pending(
      newest,
      `cannot reach the chain to reconcile (${shortText(error)}); retry later`,
    );
  }
}

/** A settlement another process's key sent, not mined yet: followed here, re-sent only there. */
function notOurs(entry: JournalEntry, hash: Hex, what: string): CallOutcome {
  return failed(
    failure(
      "settlement_pending",
      `the transaction ${hash} ${what}; it was sent with key ${entry.signer}, which this process does not hold: the process that holds it follows it (and sends it again if it is dropped) — retry to get the outcome`,
      { status: 503, retryAfterSeconds: 2 },
    ),
    hash,
  );
}

export type Recheck =
  /** The chain has it (mined, or still in the pool): the journal's success stands. */
  | {
      readonly kind: "standing";
      readonly hash: Hex;
      readonly receipt?: TransactionReceipt;
      /** The node read from has not seen it yet (it reads behind the one that took it). */
      readonly unseen?: boolean;
    }
  /** It is gone, and the payment retried is not the one journaled. */
  | { readonly kind: "refused"; readonly failure: Failure }
  /** It was dropped (a reorg) and has been sent again: this is how it came out. */
  | { readonly kind: "resent"; readonly outcome: CallOutcome }
  /** It left the pool and could be sent again, but this settle may not send (a dry run). */
  | { readonly kind: "sendable"; readonly hash: Hex }
  /** It is gone and its bytes cannot be sent again: settle afresh if the payment still can. */
  | { readonly kind: "gone" };

/**
 * A success was answered for this entry: is its transaction still on the chain? If a reorg
 * dropped it and its nonce is free again, the same signed bytes (kept by the lane for recent
 * nonces) are broadcast again and followed, if `may` allows (never in a dry run). When the chain
 * cannot be asked, the journal's word stands: nothing is ever sent on a guess.
 */
export async function recheckAnswered(
  ctx: SendingAccess,
  journaled: JournalEntry,
  samePayment: () => Promise<Failure | null>,
  may: MaySend | undefined,
): Promise<Recheck> {
  const entry = evmEntry(journaled);
  const newest = entry.hashes[entry.hashes.length - 1] as Hex;
  try {
    const [seen, head] = await Promise.all([
      lookUp(ctx, entry),
      ctx.client.getBlock({ blockTag: "latest" }).catch(() => undefined),
    ]);
    if (seen.receipt) {
      return seen.receipt.status === "success"
        ? { kind: "standing", hash: seen.receipt.transactionHash, receipt: seen.receipt }
        : { kind: "gone" };
    }
    if (seen.inPool) return { kind: "standing", hash: seen.inPool };
    const mismatch = await samePayment();
    if (mismatch) return { kind: "refused", failure: mismatch };
    // Its nonce went to another transaction, by the word of a node that has seen it.
    if (seen.nonceUsed) return { kind: "gone" };
    // This node has not seen the nonce used: a reorg dropped the transaction, or the node reads
    // behind the block it is in (a lagging replica). Never judged gone from here: the same bytes
    // go to the node that takes broadcasts, which tells; without them the journal's word stands.
    const lane = ctx.signers.byAddress(entry.signer);
    const raw = bytesOf(lane, ctx, entry);
    if (!lane || !raw) {
      // Without the bytes, a node whose newest block came after our answer has had the block the
      // transaction was in, and lost it (a reorg): settled afresh. One behind our answer may only
      // lag (a read replica): the journal's word stands until it catches up.
      const after =
        head &&
        entry.updatedAt !== undefined &&
        Number(head.timestamp) * 1000 >= entry.updatedAt + LAG_MARGIN_MS;
      return after ? { kind: "gone" } : { kind: "standing", hash: newest, unseen: true };
    }
    // Only if the authorization is unused again: a resend that reverts would cost gas for nothing.
    if (!(await stillSucceeds(ctx, lane.address, raw))) return { kind: "gone" };
    if (!may) return { kind: "sendable", hash: newest };
    const resent = await resend(ctx, lane, entry.txNonce, raw, may);
    if (resent === "refused") return { kind: "gone" };
    if (resent !== "sent") return { kind: "standing", hash: newest, unseen: true };
    const tx = parseTransaction(raw) as TransactionSerializable;
    const outcome = await follow(ctx, lane, entry.key, [...entry.hashes], tx, feesOf(tx), may);
    return { kind: "resent", outcome };
  } catch {
    return { kind: "standing", hash: newest };
  }
}
