/**
 * The reconciler's look at one Solana settlement written down and not at its end: its signature's
 * status now; if the cluster has none and its blockhash is still valid, the same signed bytes are
 * sent again (anyone may: the fee payer's signature is in them); once the blockhash has expired
 * with no status, it can never land.
 */
import type { Followed } from "../../core/family.js";
import { isUnreachable } from "../../core/rpc.js";
import type { JournalEntry } from "../../core/store.js";
import type { SvmSettleContext } from "./context.js";
import { decodeSvmTransaction } from "./decode.js";
import { isBlockhashValid, sendTransaction, signatureStatuses } from "./rpc.js";

export async function followSvmSettlement(
  ctx: SvmSettleContext,
  entry: JournalEntry,
): Promise<Followed> {
  const network = ctx.network;
  const signature = entry.hashes.at(-1) as string;
  const [status] = await signatureStatuses(ctx.client, [signature], true);
  const final =
    status?.confirmationStatus === "confirmed" || status?.confirmationStatus === "finalized";
  if (status && final) {
    if (status.err === null) {
      ctx.ledger.landed(entry.key, BigInt(status.slot));
      return {
        outcome: "landed",
        network,
        transaction: signature,
        detail: `in slot ${status.slot}`,
      };
    }
    ctx.ledger.release(entry.key);
    return {
      outcome: "failed",
      network,
      transaction: signature,
      detail: `it failed in slot ${status.slot}`,
    };
  }
  if (status)
    return {
      outcome: "open",
      network,
      transaction: signature,
      detail: "processed, not yet confirmed",
    };
  const raw = entry.raws.at(-1);
  const decoded = raw ? decodeSvmTransaction(raw) : undefined;
  const blockhash = decoded?.ok ? decoded.transaction.recentBlockhash : undefined;
  if (raw && blockhash && (await isBlockhashValid(ctx.client, blockhash))) {
    await sendTransaction(ctx.client, raw).catch((error: unknown) => {
      if (isUnreachable(error)) throw error;
    });
    return {
      outcome: "open",
      network,
      transaction: signature,
      detail: "sent again: the cluster had not seen it",
    };
  }
  // Its blockhash expired: it landed by now or never will.
  const [late] = await signatureStatuses(ctx.client, [signature], true);
  if (late)
    return {
      outcome: "open",
      network,
      transaction: signature,
      detail: "seen at last; not yet confirmed",
    };
  ctx.ledger.release(entry.key);
  return {
    outcome: "failed",
    network,
    transaction: signature,
    detail: "its blockhash expired before it landed: it took nothing",
  };
}
