/** Follows a broadcast until mined deep enough, re-sending, replacing at its nonce, filling gaps. */
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
import { bytesOfHex } from "./abi-words.js";
import type { ChainAccess } from "./access.js";
import { broadcast, NONCE_USED, type Refusal, refusal, sendRaw } from "./broadcast.js";
import { bumpedFees, overCap } from "./fees.js";
import { forgetGasEstimates } from "./gas.js";
import { keccak256Hex } from "./keccak.js";
import { isLocalNode, LOCAL_PARKED_AFTER_MS, sawBlock } from "./local-node.js";
import { type CallOutcome, fullText, nodeSaid, pending } from "./outcome.js";
import { firstReceipt } from "./receipts.js";
import type { SignerLane } from "./signers.js";

const FIRST_POLLS_MS = [10, 20, 40, 80, 160];
/** Off local nodes a transaction may wait a few blocks before a gap is suspected. */
const GAP_SUSPECTED_AFTER_MS = 3_000;
/** Replacements of a transaction passed over by blocks before its key is judged blocked. */
const BLOCKED_AFTER_REPLACEMENTS = 3;

/** Whether a local node passed ours over (its key's next; automine or blocks since). Replacing
 * one behind an earlier nonce jams anvil: foundry-rs/foundry#16638. */
async function parkedOnLocalNode(
  ctx: ChainAccess,
  lane: SignerLane,
  sinceBlock: bigint | undefined,
  nonce: number | undefined,
) {
  const [automines, { mined: next, block }] = await Promise.all([
    ctx.client.request({ method: "anvil_getAutomine" } as never).then(
      (answer) => answer === true,
      () => false,
    ),
    headOfLine(ctx, lane, nonce),
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

const headBlock = (ctx: ChainAccess) =>
  ctx.client.getBlockNumber({ cacheTime: 0 }).catch(() => undefined);
const minedCount = (ctx: ChainAccess, address: Address) =>
  ctx.client.getTransactionCount({ address, blockTag: "latest" }).catch(() => undefined);

/** Whether a successful receipt has the confirmations asked for (1: being mined is enough). */
async function deepEnough(ctx: ChainAccess, receipt: TransactionReceipt): Promise<boolean> {
  if (ctx.confirmations <= 1) return true;
  const head = await headBlock(ctx);
  return head !== undefined && head - receipt.blockNumber + 1n >= BigInt(ctx.confirmations);
}

/** Waits for any of `hashes` mined deep enough, never throws: past `until` (else the confirm
 * timeout), `settlement_pending` with the newest hash. `sentAfterBlock`: mined by then. */
export async function follow(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  hashes: Hex[],
  tx: TransactionSerializable,
  may: MaySend,
  sentAt?: number,
  sentAfterBlock?: bigint,
  until?: number,
): Promise<CallOutcome> {
  const started = Date.now();
  const deadline = until ?? started + ctx.confirmTimeoutMs;
  let replaceAt = started + ctx.replaceAfterMs;
  const local = await isLocalNode(ctx.client);
  // Blocks after this one that leave it unmined passed it over; read beside the first poll.
  const headAtStart = sentAfterBlock === undefined ? headBlock(ctx) : undefined;
  let sinceBlock = sentAfterBlock;
  let stuckCheckAt = local
    ? (sentAt ?? started) + LOCAL_PARKED_AFTER_MS
    : started + GAP_SUSPECTED_AFTER_MS;
  let current = tx;
  let replacements = 0;
  /** The head when it was first seen to be its key's next to be mined. */
  let headSince: bigint | undefined;
  /** The head when it was sent: a chain still there mines no blocks (replaced on time alone). */
  let sentInBlock = sentAfterBlock;
  let soon = 0;
  for (;;) {
    const receipt = await firstReceipt(ctx.client, hashes);
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
      const seen = local ? await parkedOnLocalNode(ctx, lane, sinceBlock, tx.nonce) : undefined;
      if (seen?.parked) {
        parked = true;
        // Only a block that passes the replacement over as well replaces it again.
        sinceBlock = seen.block ?? sinceBlock;
      }
    }
    if (!receipt && (parked || now >= replaceAt)) {
      replaceAt = now + ctx.replaceAfterMs;
      const head = parked ? undefined : await headOfLine(ctx, lane, tx.nonce);
      // Only the key's next transaction is replaced, once blocks since it became next left it out:
      // one behind an earlier nonce is mined right after it (replacing would only cost).
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
        if (replacements >= BLOCKED_AFTER_REPLACEMENTS) {
          const times = `replaced ${replacements} times with raised fees`;
          lane.blocked(ctx.chainId, tx.nonce, since, `${times}, and blocks still leave it out`);
        } else {
          // null: not written down, so not sent; the next round tries again.
          const raised = await raisedFees(ctx, lane, key, current).catch(() => null);
          if (raised === undefined) {
            lane.blocked(ctx.chainId, tx.nonce, since, "not mined, and its fee is at the fee cap");
          } else if (raised) {
            const replaced = await replace(ctx, lane, raised.raw, may);
            if (replaced === true) {
              hashes.push(raised.hash);
              current = raised.tx;
              if (passedOver) replacements++;
              sinceBlock = head?.block ?? sinceBlock;
              headSince = head?.block;
              soon = 0;
            } else if (replaced !== undefined) {
              const why = `the node refused its replacement: ${replaced}`;
              lane.blocked(ctx.chainId, tx.nonce, since, why);
            }
          }
        }
      }
    }
    // Fast chains mine within milliseconds: look again soon at first, then at the interval.
    const wait = Math.min(FIRST_POLLS_MS[soon++] ?? ctx.receiptPollMs, ctx.receiptPollMs);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.min(wait, Math.max(1, deadline - now))),
    );
  }
}

/** The key's mined count and the head block, read together; what failed to be read is missing. */
async function headOfLine(ctx: ChainAccess, lane: SignerLane, nonce: number | undefined) {
  const [mined, block] = await Promise.all([
    nonce === undefined ? undefined : minedCount(ctx, lane.address),
    headBlock(ctx),
  ]);
  if (mined !== undefined) lane.sawMined(ctx.chainId, mined);
  return { mined, block };
}

/** What an unmined transaction of ours waits behind: the key's earliest unmined one, if any. */
async function waitingBehind(
  ctx: ChainAccess,
  lane: SignerLane,
  nonce: number | undefined,
): Promise<string> {
  if (nonce === undefined) return "";
  const mined = await minedCount(ctx, lane.address);
  if (mined === undefined || mined >= nonce) return "";
  const raw = lane.recentRaw(ctx.chainId, mined);
  const earlier = raw ? keccak256(raw) : "a transaction";
  return `, behind ${earlier}, sent by this key (${lane.address}) with nonce ${mined} and not mined yet either`;
}

/** Broadcasts a replacement: true once sent, the node's refusal, or undefined ("known", lost). */
async function replace(
  ctx: ChainAccess,
  lane: SignerLane,
  raw: Hex,
  may: MaySend,
): Promise<true | string | undefined> {
  try {
    await sendRaw(ctx, raw, may);
  } catch (error) {
    if (isUnreachable(error)) return undefined;
    // "Nonce too low": mined meanwhile, the next poll tells; "known": it has it.
    if (refusal(error) === "known" || NONCE_USED.test(fullText(error))) return undefined;
    return nodeSaid(error);
  }
  ctx.metrics?.transactionReplaced(ctx.chainId, lane.address);
  return true;
}

export type Issued = { hash: Hex; nonce: number; tx: TransactionSerializable; raw: Hex };

export type Refused = { readonly kind: Refusal; readonly text: string };

/** Waits before each re-send, within the settle's time. */
const RESEND_WAITS_MS = [200, 500, 1_000, 2_000, 4_000];
const TRANSIENT: ReadonlySet<Refusal> = new Set(["nonce-ahead", "tip", "pool", "rate"]);

/** The refusals of a settle in a few words, for its answer: "txpool is full (pool), twice". */
export function refusalsSaid(refused: readonly Refused[]): string {
  const counts = new Map<string, number>();
  for (const r of refused) {
    const said = `${r.text} (${r.kind})`;
    counts.set(said, (counts.get(said) ?? 0) + 1);
  }
  return [...counts].map(([said, n]) => (n > 1 ? `${said} ×${n}` : said)).join("; ");
}

/** Broadcasts `issued`, re-sending on transient refusals (noted in `refused`) until `deadline`. */
export async function broadcastResending(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  issued: Issued,
  wantReceipt: boolean,
  deadline: number,
  refused: Refused[],
  may: MaySend,
): Promise<{ receipt: TransactionReceipt | undefined; issued: Issued }> {
  let current = issued;
  for (let attempt = 0; ; attempt++) {
    try {
      const receipt = await broadcast(ctx, current.raw, current.hash, wantReceipt, may, deadline);
      return { receipt, issued: current };
    } catch (error) {
      const kind = isUnreachable(error) ? "other" : refusal(error);
      const wait = RESEND_WAITS_MS[attempt];
      if (!TRANSIENT.has(kind) || wait === undefined || Date.now() + wait >= deadline) throw error;
      refused.push({ kind, text: nodeSaid(error) });
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (kind === "tip") {
        const raised = await raisedFees(ctx, lane, key, current.tx);
        if (!raised) throw error;
        current = raised;
      }
    }
  }
}

/** The same nonce with raised fees, signed and journaled as a replacement; none over the cap. */
async function raisedFees(
  ctx: ChainAccess,
  lane: SignerLane,
  key: string,
  signed: TransactionSerializable,
): Promise<Issued | undefined> {
  const fees = bumpedFees(signed);
  if (overCap(ctx, signed.gas ?? 0n, fees)) return undefined;
  const tx = { ...signed, ...fees } as TransactionSerializable;
  const raw = await lane.account.signTransaction(tx);
  const hash = keccak256Hex(bytesOfHex(raw));
  await ctx.journal.recordReplace(key, hash, raw);
  const nonce = tx.nonce ?? 0;
  lane.remember(ctx.chainId, nonce, raw);
  return { hash, raw, nonce, tx };
}
