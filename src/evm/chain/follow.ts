/**
 * Following a broadcast settlement until it is mined (deep enough), replacing it at the same nonce
 * when it sits unmined, and repairing nonce gaps that keep it from being mined at all.
 */
import {
  type Address,
  getAddress,
  type Hex,
  keccak256,
  type TransactionReceipt,
  type TransactionSerializable,
} from "viem";
import type { MaySend } from "../../core/settle-loop.js";
import { isUnreachable } from "../../rpc/rpc.js";
import type { ChainAccess } from "./access.js";
import { NONCE_USED, refusal, sendRaw } from "./broadcast.js";
import { bump, type Fees, overCap } from "./fees.js";
import { forgetGasEstimates } from "./gas.js";
import { isLocalNode, LOCAL_PARKED_AFTER_MS, sawBlock } from "./local-node.js";
import { type CallOutcome, fullText, nodeSaid, pending } from "./outcome.js";
import type { SignerLane } from "./signers.js";

const FIRST_POLLS_MS = [10, 20, 40, 80, 160];
/** On other chains a transaction may wait a few blocks before a missing predecessor is suspected. */
const GAP_SUSPECTED_AFTER_MS = 3_000;
/** Replacements of a transaction passed over by blocks before its key is judged blocked. */
const BLOCKED_AFTER_REPLACEMENTS = 3;

/**
 * Whether a local node passed over our transaction: it is the next of its key to be mined (an
 * earlier one unmined holds it back, and is the one to look at), and the node automines or blocks
 * came since. Replacing one that waits behind an earlier nonce is also what anvil's pool of
 * waiting transactions mishandles: it keeps every replacement and none of them can be mined again
 * (foundry-rs/foundry#16638, fixed after anvil 1.7.1, the one npm ships).
 */
async function parkedOnLocalNode(
  ctx: ChainAccess,
  sinceBlock: bigint | undefined,
  from: Address,
  nonce: number | undefined,
) {
  const [automines, block, next] = await Promise.all([
    ctx.client.request({ method: "anvil_getAutomine" } as never).then(
      (answer) => answer === true,
      () => false,
    ),
    ctx.client.getBlockNumber({ cacheTime: 0 }).catch(() => undefined),
    nonce === undefined
      ? undefined
      : ctx.client
          .getTransactionCount({ address: from, blockTag: "latest" })
          .catch(() => undefined),
  ]);
  if (nonce !== undefined && next !== undefined && next !== nonce) return { parked: false, block };
  const passed = sinceBlock !== undefined && block !== undefined && block > sinceBlock;
  return { parked: automines || passed, block };
}

/** The outcome of a mined transaction; a revert also drops reused gas estimates. */
export function mined(
  ctx: ChainAccess,
  key: string,
  receipt: TransactionReceipt,
  gasLimit: bigint | undefined,
): CallOutcome {
  ctx.metrics?.transactionMined(ctx.chainId, {
    hash: receipt.transactionHash,
    signer: getAddress(receipt.from),
    reverted: receipt.status !== "success",
    gasWei: receipt.gasUsed * (receipt.effectiveGasPrice ?? 0n),
  });
  sawBlock(ctx.client, receipt.blockNumber);
  if (receipt.status !== "success") {
    void ctx.journal.recordState(key, "failed").catch(() => undefined);
    forgetGasEstimates();
    const outOfGas = gasLimit !== undefined && receipt.gasUsed >= gasLimit;
    return { kind: "reverted", hash: receipt.transactionHash, receipt, outOfGas };
  }
  return { kind: "confirmed", hash: receipt.transactionHash, receipt };
}

async function firstReceipt(ctx: ChainAccess, hashes: readonly Hex[]) {
  const receipts = await Promise.all(
    hashes.map((hash) => ctx.client.getTransactionReceipt({ hash }).catch(() => undefined)),
  );
  return receipts.find((r) => r !== undefined);
}

/** Whether a successful receipt has the confirmations asked for (1: being mined is enough). */
async function deepEnough(ctx: ChainAccess, receipt: TransactionReceipt): Promise<boolean> {
  if (ctx.confirmations <= 1) return true;
  const head = await ctx.client.getBlockNumber({ cacheTime: 0 }).catch(() => undefined);
  return head !== undefined && head - receipt.blockNumber + 1n >= BigInt(ctx.confirmations);
}

/**
 * Waits for any of `hashes` to be mined with the confirmations asked for. A transaction sitting in
 * the mempool for `replaceAfterMs` is replaced with a higher fee at the same nonce; one waiting
 * behind a nonce gap gets the gap filled. A receipt that disappears before it is deep enough (a
 * reorg) is waited for again. Never throws: past the deadline, the answer is `settlement_pending`
 * with the newest hash. `sentAt`: when the newest was broadcast, if just now (a local node's pass
 * over it is looked for from then); `sentAfterBlock`: a block the node had mined by then, if known
 * (local-node.ts' newestBlockSeen), else the head when following starts. `until`: a deadline of
 * the settle's own, when its broadcast already spent the confirm timeout (broadcast.ts).
 */
export async function follow(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  hashes: Hex[],
  tx: TransactionSerializable,
  fees: Fees,
  may: MaySend,
  sentAt?: number,
  sentAfterBlock?: bigint,
  until?: number,
): Promise<CallOutcome> {
  const started = Date.now();
  const deadline = until ?? started + ctx.confirmTimeoutMs;
  let replaceAt = started + ctx.replaceAfterMs;
  const local = await isLocalNode(ctx.client);
  // Blocks after this one that leave it unmined passed it over. Read beside the first receipt
  // poll, not before it: it costs no round trip of its own.
  const headAtStart =
    sentAfterBlock === undefined
      ? ctx.client.getBlockNumber({ cacheTime: 0 }).catch(() => undefined)
      : undefined;
  let sinceBlock = sentAfterBlock;
  let stuckCheckAt = local
    ? (sentAt ?? started) + LOCAL_PARKED_AFTER_MS
    : started + GAP_SUSPECTED_AFTER_MS;
  let current = fees;
  let replacements = 0;
  /** The head block when it was first seen to be its key's next to be mined. */
  let headSince: bigint | undefined;
  /** The head when it was sent: a chain still there mines no blocks (replaced on time alone). */
  let sentInBlock = sentAfterBlock;
  /** Which of FIRST_POLLS_MS the next wait is. */
  let soon = 0;
  for (;;) {
    const receipt = await firstReceipt(ctx, hashes);
    sinceBlock ??= await headAtStart;
    sentInBlock ??= sinceBlock;
    if (receipt && tx.nonce !== undefined) lane.sawMined(ctx.chainId, tx.nonce + 1);
    if (receipt && (receipt.status !== "success" || (await deepEnough(ctx, receipt)))) {
      return mined(ctx, key, receipt, tx.gas);
    }
    const now = Date.now();
    const hole = lane.state(ctx.chainId).hole;
    const behindHole = hole !== undefined && tx.nonce !== undefined && hole.nonce < tx.nonce;
    if (now >= deadline || (!receipt && behindHole)) {
      const newest = hashes[hashes.length - 1] as Hex;
      const why = receipt
        ? `mined in block ${receipt.blockNumber}, not yet ${ctx.confirmations} confirmations deep`
        : `the transaction is pending${await waitingBehind(ctx, lane, tx.nonce)}`;
      const within = behindHole
        ? "no receipt"
        : `no confirmed receipt within ${Math.round(ctx.confirmTimeoutMs / 1000)} s`;
      return pending(newest, `${within} (${why}); retry the same payment to reconcile`);
    }
    let parked = false;
    if (!receipt && now >= stuckCheckAt) {
      stuckCheckAt = now + LOCAL_PARKED_AFTER_MS;
      if (tx.nonce !== undefined) await lane.repairGap(ctx, tx.nonce, may);
      const seen = local
        ? await parkedOnLocalNode(ctx, sinceBlock, lane.address, tx.nonce)
        : undefined;
      if (seen?.parked) {
        parked = true;
        // The replacement is judged from here: only a block that passes it over as well replaces
        // it again (the block compared may be older than the broadcast: local-node.ts).
        sinceBlock = seen.block ?? sinceBlock;
      }
    }
    if (!receipt && (parked || now >= replaceAt)) {
      replaceAt = now + ctx.replaceAfterMs;
      const head = parked ? undefined : await headOfLine(ctx, lane, tx.nonce);
      // Only the key's next transaction to be mined is replaced, and only once blocks came that
      // left it out: one waiting behind an earlier unmined nonce is mined right after that one
      // (a replacement would only cost), and a node that mined nothing passed nothing over.
      // Blocks count from when it was seen to be the next: those before may have been filled by
      // the earlier ones (a full block passes over nothing of ours).
      if (!head || head.mined !== tx.nonce) headSince = undefined;
      else if (headSince === undefined) headSince = head.block;
      const isNext = head !== undefined && head.mined === tx.nonce && headSince !== undefined;
      const headBlock = head?.block;
      const passedOver =
        parked || (isNext && headBlock !== undefined && headBlock > (headSince ?? headBlock));
      // No block at all since it was sent (a node mining on demand): replaced on time alone.
      const noBlocks = isNext && headBlock !== undefined && headBlock === sentInBlock;
      if ((passedOver || noBlocks) && tx.nonce !== undefined) {
        const since = sentAt ?? started;
        const next = bump(current);
        if (replacements >= BLOCKED_AFTER_REPLACEMENTS) {
          const times = `replaced ${replacements} times with raised fees`;
          lane.blocked(ctx.chainId, tx.nonce, since, `${times}, and blocks still leave it out`);
        } else if (overCap(ctx, tx.gas ?? 0n, next)) {
          lane.blocked(ctx.chainId, tx.nonce, since, "not mined, and its fee is at the fee cap");
        } else {
          const replacement = { ...tx, ...next } as TransactionSerializable;
          const replaced = await replace(ctx, lane, key, replacement, may);
          if ("hash" in replaced) {
            hashes.push(replaced.hash);
            current = next;
            // Only what blocks passed over counts toward judging the key blocked.
            if (passedOver) replacements++;
            sinceBlock = head?.block ?? sinceBlock;
            headSince = head?.block;
            // It may be mined as soon as the first was (a local node's at once): look soon again.
            soon = 0;
          } else if (replaced.refused !== undefined) {
            // A refused replacement is not swallowed: the hole cannot be filled from here.
            const why = `the node refused its replacement: ${replaced.refused}`;
            lane.blocked(ctx.chainId, tx.nonce, since, why);
          }
        }
      }
    }
    // Fast chains (and a local node) mine within milliseconds: look again soon at first, then
    // settle into the configured interval.
    const wait = Math.min(FIRST_POLLS_MS[soon++] ?? ctx.receiptPollMs, ctx.receiptPollMs);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.min(wait, Math.max(1, deadline - now))),
    );
  }
}

/** The key's mined count and the head block, read together; what failed to be read is missing. */
async function headOfLine(ctx: ChainAccess, lane: SignerLane, nonce: number | undefined) {
  const [mined, block] = await Promise.all([
    nonce === undefined
      ? undefined
      : ctx.client
          .getTransactionCount({ address: lane.address, blockTag: "latest" })
          .catch(() => undefined),
    ctx.client.getBlockNumber({ cacheTime: 0 }).catch(() => undefined),
  ]);
  if (mined !== undefined) lane.sawMined(ctx.chainId, mined);
  return { mined, block };
}

/**
 * What an unmined transaction of ours waits behind: the earliest unmined one of the same key, by
 * its hash and nonce, when it is ours to name; else nothing.
 */
async function waitingBehind(
  ctx: ChainAccess,
  lane: SignerLane,
  nonce: number | undefined,
): Promise<string> {
  if (nonce === undefined) return "";
  const mined = await ctx.client
    .getTransactionCount({ address: lane.address, blockTag: "latest" })
    .catch(() => undefined);
  if (mined === undefined || mined >= nonce) return "";
  const raw = lane.recentRaw(ctx.chainId, mined);
  const earlier = raw ? keccak256(raw) : "a transaction";
  return `, behind ${earlier}, sent by this key (${lane.address}) with nonce ${mined} and not mined yet either`;
}

/**
 * Signs `tx` again (same nonce, higher fee), journals it, broadcasts it: its hash; or what the
 * node said refusing it, unless that says it was mined meanwhile or is known (the next poll tells).
 */
async function replace(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  tx: TransactionSerializable,
  may: MaySend,
): Promise<{ hash: Hex } | { refused?: string }> {
  let hash: Hex;
  let raw: Hex;
  try {
    raw = await lane.account.signTransaction(tx);
    hash = keccak256(raw);
    await ctx.journal.recordReplace(key, hash, raw);
  } catch {
    // Not written down, so not sent: the next round tries again.
    return {};
  }
  if (tx.nonce !== undefined) lane.remember(ctx.chainId, tx.nonce, raw);
  try {
    await sendRaw(ctx, raw, may);
  } catch (error) {
    if (isUnreachable(error)) return {};
    const why = refusal(error);
    // "Nonce too low": mined meanwhile, the next poll tells; "known": it has it.
    if (why === "known" || NONCE_USED.test(fullText(error))) return {};
    return { refused: nodeSaid(error) };
  }
  ctx.metrics?.transactionReplaced(ctx.chainId, lane.address);
  return { hash };
}
