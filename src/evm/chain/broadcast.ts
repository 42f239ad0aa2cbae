/**
 * Handing signed bytes to the node, and reading what it said back. Re-sending the same bytes is
 * harmless (same hash, same nonce), which is what makes the retries here safe.
 */
import type { Hex, TransactionReceipt } from "viem";
import type { MaySend } from "../../core/settle-loop.js";
import { isUnreachable } from "../../rpc/rpc.js";
import type { ChainAccess } from "./access.js";
import { knownLocalNode, LOCAL_PARKED_AFTER_MS } from "./local-node.js";
import { fullText, isHashEqual } from "./outcome.js";
import { isRevert } from "./revert.js";

/**
 * How the node refused a broadcast, as far as our nonce bookkeeping is concerned. "known": it has
 * the bytes; "nonce": the nonce is used (mined, or held in the pool by another transaction);
 * "fee": its max fee is below the base fee of the block it would go in (the nonce is still ours).
 * The rest say nothing of the payment, and the node did not take the bytes: "nonce-ahead" (a
 * node behind a balancer that has not seen our previous nonce), "tip" (below the pool's minimum
 * fee), "pool" (the pool is full), "rate" (a rate limit answered in a JSON-RPC error).
 */
export type Refusal = "known" | "nonce" | "fee" | "nonce-ahead" | "tip" | "pool" | "rate" | "other";

/**
 * The node has a transaction of ours mined (or being mined) at this nonce: geth and anvil say
 * "nonce too low"; ganache 7.9 "the tx doesn't have the correct nonce. account has nonce of: N tx
 * has nonce of: M", or, for a replacement of one it is mining, "transaction can't be replaced,
 * mining has already started".
 */
export const NONCE_USED =
  /nonce too low|doesn't have the correct nonce|can't be replaced, mining has already started/i;

const REFUSALS: readonly (readonly [Refusal, RegExp])[] = [
  ["known", /already known|known transaction|already imported/i],
  ["fee", /(max fee per gas|fee cap) less than block base fee|lower than the block base fee/i],
  ["nonce", NONCE_USED],
  ["nonce", /nonce.*(already|used)|replacement transaction underpriced/i],
  ["nonce-ahead", /nonce too high|nonce gap|future nonce/i],
  [
    "tip",
    /underpriced|fee too low|(tip|priority fee|gas price)( per gas)? (is )?(too low|below)|below (the )?minimum/i,
  ],
  ["pool", /(tx|transaction|mem)\s?pool (is )?full|pool limit|too many pending/i],
  ["rate", /rate limit|too many requests|limit exceeded|capacity exceeded/i],
];

export function refusal(error: unknown): Refusal {
  const text = fullText(error);
  for (const [kind, pattern] of REFUSALS) if (pattern.test(text)) return kind;
  return "other";
}

/** Whether the node has the transaction (pending or mined). */
export function isKnown(ctx: ChainAccess, hash: Hex): Promise<boolean> {
  return ctx.client.getTransaction({ hash }).then(
    () => true,
    () => false,
  );
}

/**
 * Hands signed bytes to the node, the same bytes again included: with broadcast(), the one way a
 * transaction of ours leaves for an EVM node, and only with the licence the settle loop (or the
 * reconciler) hands out (docs/design.md, "The settle loop").
 */
export async function sendRaw(ctx: ChainAccess, raw: Hex, _may: MaySend): Promise<void> {
  await ctx.client.sendRawTransaction({ serializedTransaction: raw });
}

/** `promise`'s value, or undefined once `deadline` (a Date.now() time) has passed. */
async function until<T>(promise: Promise<T>, deadline: number): Promise<T | undefined> {
  if (deadline === Number.POSITIVE_INFINITY) return promise;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Clients whose node failed eth_sendRawTransactionSync where the plain method worked. */
const withoutSync = new WeakSet<object>();
/** How long to wait for the synchronous answer before polling for the receipt instead. */
const SYNC_WAIT_MS = 2_000;

/**
 * Broadcasts signed bytes. When a receipt is wanted and the node has eth_sendRawTransactionSync
 * (EIP-7966: anvil, geth 1.16.6+, erigon 3.4+), the same request answers with the receipt, which
 * saves the polling round trips. Returns the receipt if it came with the answer; throws what the
 * node said if it refused the transaction.
 *
 * When the synchronous call fails in a way that says nothing about the transaction, the plain
 * method sends the same bytes again. Its answer is waited for no later than `deadline` (the
 * settle's confirm timeout): unanswered by then, the transaction is followed as sent.
 */
export async function broadcast(
  ctx: ChainAccess,
  raw: Hex,
  hash: Hex,
  wantReceipt: boolean,
  may: MaySend,
  deadline = Number.POSITIVE_INFINITY,
): Promise<TransactionReceipt | undefined> {
  const { client } = ctx;
  if (!wantReceipt || withoutSync.has(client)) {
    await sendRaw(ctx, raw, may);
    return undefined;
  }
  const answer = client
    .sendRawTransactionSync({ serializedTransaction: raw, throwOnReceiptRevert: false })
    .then(
      (receipt) => ({ receipt }),
      (error: unknown) => ({ error }),
    );
  // On a local node, a transaction not answered by then was passed over (local-node.ts):
  // following it looks for that at once.
  const syncWaitMs = knownLocalNode(client) ? LOCAL_PARKED_AFTER_MS : SYNC_WAIT_MS;
  const waitMs = Math.min(syncWaitMs, ctx.replaceAfterMs, ctx.confirmTimeoutMs);
  let result = await until(answer, Date.now() + waitMs);
  // Still waiting: the node took the transaction and it is not mined yet; polling takes over.
  // Unless the node does not know it: then our request may still be waiting out a provider's
  // rate limit (rpc/provider-limits.ts, bounded), and its answer says whether it was sent. Or
  // the node dropped it while holding the call (anvil then answers only after ~10 s): past the
  // deadline it is followed as sent, since its record stands and only its bytes are sent again.
  if (result === undefined && !(await isKnown(ctx, hash))) result = await until(answer, deadline);
  if (result === undefined) return undefined;
  if ("receipt" in result) {
    return isHashEqual(result.receipt.transactionHash, hash) ? result.receipt : undefined;
  }
  const { error } = result;
  // The node took it but gave up waiting for a block (EIP-7966 code 4, anvil says "timeout").
  if (!isUnreachable(error) && /time(d)?\s?out/i.test(fullText(error))) return undefined;
  // Our wait for the answer ran out or the connection broke, but the node holds it (a node slow
  // under load): it was sent, so it is followed like any other, not answered as lost.
  if (isUnreachable(error) && (await isKnown(ctx, hash))) return undefined;
  if (isUnreachable(error) || isRevert(error) || refusal(error) !== "other") throw error;
  try {
    await sendRaw(ctx, raw, may);
  } catch (plainError) {
    // "Nonce too low" may mean the synchronous call did send it, and it is mined already.
    if (refusal(plainError) === "nonce" && (await isKnown(ctx, hash))) return undefined;
    throw plainError;
  }
  // The plain method took what the synchronous one did not (a node without it answers "method not
  // found"): do not ask the latter again.
  withoutSync.add(client);
  return undefined;
}
