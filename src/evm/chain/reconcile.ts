/** Picks a journaled settlement back up, and rechecks a journaled success (a reorg may drop it). */
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
import { follow, mined } from "./follow.js";
import { type CallOutcome, failed, pending, shortText } from "./outcome.js";
import { type SignerLane, stillSucceeds } from "./signers.js";
import type { SendingAccess } from "./transactions.js";

/** Block timestamps are whole seconds and clocks differ a little: a head this far past counts. */
const LAG_MARGIN_MS = 2_000;

/** A node's receipt, pool and nonce answers for an entry, read together so they are of one head. */
export async function lookUp(ctx: SendingAccess, entry: EvmEntry) {
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
    nonceUsed: used > entry.txNonce,
  };
}

/** Sends signed bytes again inside the signer's lane. */
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

/** Its receipt, or follows it (re-sending the same bytes if lost); "gone": its nonce went elsewhere. */
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
      if (!lane) return notOurs(entry, newest, "is not in the node's pool and its nonce is free");
      // Sent again after its authorization expired or was used, it would revert at our cost.
      if (!(await stillSucceeds(ctx, lane.address, newestRaw))) {
        const detail = "it would revert if sent again (its authorization expired, or was used)";
        return { kind: "would-revert", reason: undefined, detail };
      }
      if ((await resend(ctx, lane, entry.txNonce, newestRaw, may)) === "refused") return "gone";
    }
    if (!lane) return notOurs(entry, newest, "is still pending");
    return follow(ctx, lane, entry.key, [...entry.hashes], tx, may);
  } catch (error) {
    return pending(
      newest,
      `cannot reach the chain to reconcile (${shortText(error)}); retry later`,
    );
  }
}

/** A settlement another process's key sent, not mined yet: followed here, re-sent only there. */
function notOurs(entry: JournalEntry, hash: Hex, what: string): CallOutcome {
  const why = `the transaction ${hash} ${what}; it was sent with key ${entry.signer}, which this process does not hold: the process that holds it follows it (and sends it again if it is dropped) — retry to get the outcome`;
  return failed(failure("settlement_pending", why, { status: 503, retryAfterSeconds: 2 }), hash);
}

// standing: the success stands (`unseen`: a lagging node); refused: not the journaled payment;
// sendable: could be re-sent, but this settle may not send; gone: settle afresh if it still can.
type Recheck =
  | {
      readonly kind: "standing";
      readonly hash: Hex;
      readonly receipt?: TransactionReceipt;
      readonly unseen?: boolean;
    }
  | { readonly kind: "refused"; readonly failure: Failure }
  | { readonly kind: "resent"; readonly outcome: CallOutcome }
  | { readonly kind: "sendable"; readonly hash: Hex }
  | { readonly kind: "gone" };

/** Is an answered success still on chain? Re-sent if a reorg dropped it; unreachable: it stands. */
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
    if (seen.nonceUsed) return { kind: "gone" };
    // A reorg, or a lagging replica: never judged gone from here; the same bytes go out instead.
    const lane = ctx.signers.byAddress(entry.signer);
    // The newest signed bytes, from the lane or the store, only if they are the entry's own.
    const newestRaw = lane?.recentRaw(ctx.chainId, entry.txNonce) ?? entry.raws.at(-1);
    const raw = newestRaw && entry.hashes.includes(keccak256(newestRaw)) ? newestRaw : undefined;
    if (!lane || !raw) {
      // Without the bytes: a head newer than our answer lost it (a reorg); an older one may lag.
      const after =
        head &&
        entry.updatedAt !== undefined &&
        Number(head.timestamp) * 1000 >= entry.updatedAt + LAG_MARGIN_MS;
      return after ? { kind: "gone" } : { kind: "standing", hash: newest, unseen: true };
    }
    if (!(await stillSucceeds(ctx, lane.address, raw))) return { kind: "gone" };
    if (!may) return { kind: "sendable", hash: newest };
    const resent = await resend(ctx, lane, entry.txNonce, raw, may);
    if (resent === "refused") return { kind: "gone" };
    if (resent !== "sent") return { kind: "standing", hash: newest, unseen: true };
    const tx = parseTransaction(raw) as TransactionSerializable;
    const outcome = await follow(ctx, lane, entry.key, [...entry.hashes], tx, may);
    return { kind: "resent", outcome };
  } catch {
    return { kind: "standing", hash: newest };
  }
}
