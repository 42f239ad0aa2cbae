/** Hands signed bytes to the node; re-sending the same bytes is harmless (same hash and nonce). */
import type { Hex, TransactionReceipt } from "viem";
import type { MaySend } from "../../core/settle-loop.js";
import { isUnreachable } from "../../rpc/rpc.js";
import type { ChainAccess } from "./access.js";
import { knownLocalNode, LOCAL_PARKED_AFTER_MS } from "./local-node.js";
import { fullText } from "./outcome.js";
import { isRevert } from "./revert.js";

// How the node refused: "known" it has the bytes, "nonce" used (mined or pooled), "fee" under the
// next base fee (nonce still ours); the rest say nothing of the payment.
export type Refusal = "known" | "nonce" | "fee" | "nonce-ahead" | "tip" | "pool" | "rate" | "other";

/** The node has ours mined (or being mined) at this nonce: geth, anvil and ganache 7.9's words. */
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

/** With broadcast(), the one way our transactions leave, only with the settle loop's licence. */
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
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Clients whose node failed eth_sendRawTransactionSync where the plain method worked. */
const withoutSync = new WeakSet<object>();
const SYNC_WAIT_MS = 2_000;

/** Broadcasts (eth_sendRawTransactionSync, EIP-7966, when a receipt is wanted); throws a
 * refusal. A silent sync failure falls back to plain; unanswered, followed as sent. */
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
  const syncWaitMs = knownLocalNode(client) ? LOCAL_PARKED_AFTER_MS : SYNC_WAIT_MS;
  const waitMs = Math.min(syncWaitMs, ctx.replaceAfterMs, ctx.confirmTimeoutMs);
  let result = await until(answer, Date.now() + waitMs);
  // Still waiting: polling takes over, unless the node does not know it (a rate limit may hold
  // our request): then its answer is waited for until the deadline.
  if (result === undefined && !(await isKnown(ctx, hash))) result = await until(answer, deadline);
  if (result === undefined) return undefined;
  if ("receipt" in result) {
    const ours = result.receipt.transactionHash.toLowerCase() === hash.toLowerCase();
    return ours ? result.receipt : undefined;
  }
  const { error } = result;
  // The node took it but gave up waiting for a block (EIP-7966 code 4, anvil says "timeout").
  if (!isUnreachable(error) && /time(d)?\s?out/i.test(fullText(error))) return undefined;
  // The connection broke but the node holds it: it was sent, so it is followed, not lost.
  if (isUnreachable(error) && (await isKnown(ctx, hash))) return undefined;
  if (isUnreachable(error) || isRevert(error) || refusal(error) !== "other") throw error;
  try {
    await sendRaw(ctx, raw, may);
  } catch (plainError) {
    // "Nonce too low" may mean the synchronous call did send it, and it is mined already.
    if (refusal(plainError) === "nonce" && (await isKnown(ctx, hash))) return undefined;
    throw plainError;
  }
  // The plain method took what the synchronous one did not: do not ask the latter again.
  withoutSync.add(client);
  return undefined;
}
