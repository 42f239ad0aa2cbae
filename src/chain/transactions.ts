/**
 * Sending one contract call from a settlement account and following it to the level the caller
 * asked for; and picking a journaled settlement back up. Returns outcomes, never throws: the
 * payment method decides what a revert means.
 *
 * Money rules kept here: the journal holds a transaction's hash and bytes before it is broadcast;
 * once something may have been broadcast, every answer carries its hash; a stuck transaction is
 * replaced at the same nonce (so at most one of them can land); nothing is sent above the fee cap.
 */
import {
  type Hex,
  isAddressEqual,
  keccak256,
  type LocalAccount,
  padHex,
  parseTransaction,
  type TransactionReceipt,
  type TransactionSerializable,
} from "viem";
import { type Failure, failure } from "../errors.js";
import type { WaitUntil } from "../protocol/schemas.js";
import type { SchemeContext } from "../schemes/types.js";
import type { ExpectedTransfer, JournalEntry } from "./journal.js";
import { isRevert, revertReason } from "./revert.js";
import { isUnreachable, neverReachedNode } from "./rpc.js";
import type { SignerLane } from "./signers.js";

export interface ContractCall {
  readonly to: `0x${string}`;
  readonly data: Hex;
}

/** What identifies the payment in the journal, and the Transfer that proves it. */
export interface SettlementRecord {
  readonly key: string;
  readonly expect: ExpectedTransfer;
  /**
   * Calls that cost the same gas each time (an EIP-3009 transfer from an account without code)
   * name a key here: after one estimate, later ones reuse it with more headroom and skip the
   * estimate. The caller must then have simulated the call itself.
   */
  readonly gasKey?: string | undefined;
}

/** Raw gas estimates by SettlementRecord.gasKey; a transaction that reverts drops its entry. */
const gasEstimates = new Map<string, { at: number; gas: bigint }>();
const GAS_ESTIMATE_MS = 10 * 60_000;
/** Reused estimates get 50 % headroom: a new recipient's first balance costs about 15k more. */
const REUSED_GAS_PERCENT = 150n;

/** Whether a settle under `gasKey` would reuse an estimate (and so must simulate first). */
export function hasGasEstimate(gasKey: string): boolean {
  const entry = gasEstimates.get(gasKey);
  return entry !== undefined && Date.now() - entry.at < GAS_ESTIMATE_MS;
}

export type CallOutcome =
  /** Signed, and checked against the latest block; not broadcast. */
  | { readonly kind: "simulated"; readonly hash: Hex }
  | { readonly kind: "submitted"; readonly hash: Hex }
  | { readonly kind: "confirmed"; readonly hash: Hex; readonly receipt: TransactionReceipt }
  /** The call would revert: nothing was broadcast. */
  | { readonly kind: "would-revert"; readonly reason: string | undefined; readonly detail: string }
  /** Mined, and reverted. */
  | { readonly kind: "reverted"; readonly hash: Hex; readonly receipt: TransactionReceipt }
  /** Anything else: no key, fee cap, node refusal, unreachable RPC, no receipt in time. */
  | { readonly kind: "failed"; readonly failure: Failure; readonly hash?: Hex | undefined };

const GAS_HEADROOM_PERCENT = 120n;
/** Nodes want at least +10 % to accept a replacement; +25 % clears that with room. */
const REPLACEMENT_BUMP_PERCENT = 125n;
const SEND_ATTEMPTS = 3;
const FIRST_POLLS_MS = [10, 20, 40, 80, 160];
/** Fee estimates are reused this long per chain: about a block on fast chains. */
const FEE_CACHE_MS = 1_000;
const feeCache = new WeakMap<object, { at: number; fees: Promise<Fees> }>();

type Fees =
  | {
      readonly type: "eip1559";
      readonly maxFeePerGas: bigint;
      readonly maxPriorityFeePerGas: bigint;
    }
  | { readonly type: "legacy"; readonly gasPrice: bigint };

function shortText(error: unknown): string {
  if (error instanceof Error) {
    const short = (error as { shortMessage?: string }).shortMessage ?? error.message;
    return short.split("\n")[0] ?? short;
  }
  return String(error);
}

/** Everything the node says about a transaction, details included, for matching its refusals. */
function fullText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const details = (error as { details?: string }).details ?? "";
  return `${error.message}\n${details}`;
}

function failed(f: Failure, hash?: Hex): CallOutcome {
  return { kind: "failed", failure: f, hash };
}

function infrastructure(error: unknown, doing: string): CallOutcome {
  if (isUnreachable(error)) {
    // Facilitator.settle makes every chain_unavailable of a settle a 500.
    return failed(failure("chain_unavailable", `${doing}: ${shortText(error)}`));
  }
  return failed(failure("settlement_failed", `${doing}: ${shortText(error)}`, { status: 500 }));
}

function pending(hash: Hex, why: string): CallOutcome {
  return failed(failure("settlement_pending", why), hash);
}

/** The chain's current fees, shared by the settles of the same second. */
function estimateFees(ctx: SchemeContext): Promise<Fees> {
  const cached = feeCache.get(ctx.client);
  if (cached && Date.now() - cached.at < FEE_CACHE_MS) return cached.fees;
  const fees = readFees(ctx);
  feeCache.set(ctx.client, { at: Date.now(), fees });
  fees.catch(() => feeCache.delete(ctx.client));
  return fees;
}

async function readFees(ctx: SchemeContext): Promise<Fees> {
  try {
    const fees = await ctx.client.estimateFeesPerGas({ chain: null, type: "eip1559" });
    return { type: "eip1559", ...fees };
  } catch (error) {
    if (isUnreachable(error)) throw error;
    // A chain without EIP-1559 blocks: fall back to a legacy gas price.
    return { type: "legacy", gasPrice: await ctx.client.getGasPrice() };
  }
}

const pricePerGas = (fees: Fees) => (fees.type === "eip1559" ? fees.maxFeePerGas : fees.gasPrice);

function bump(fees: Fees): Fees {
  const up = (value: bigint) => (value * REPLACEMENT_BUMP_PERCENT) / 100n + 1n;
  return fees.type === "eip1559"
    ? {
        type: "eip1559",
        maxFeePerGas: up(fees.maxFeePerGas),
        maxPriorityFeePerGas: up(fees.maxPriorityFeePerGas),
      }
    : { type: "legacy", gasPrice: up(fees.gasPrice) };
}

function overCap(ctx: SchemeContext, gas: bigint, fees: Fees): Failure | undefined {
  const cap = ctx.feeCapWei;
  const cost = gas * pricePerGas(fees);
  if (cap === undefined || cost <= cap) return undefined;
  return failure(
    "settlement_failed",
    `the settlement could cost up to ${cost} wei (gas ${gas} at ${pricePerGas(fees)} wei), over the fee cap of ${cap} wei`,
    { status: 500 },
  );
}

async function sign(
  account: LocalAccount,
  tx: TransactionSerializable,
): Promise<{ raw: Hex; hash: Hex }> {
  const raw = await account.signTransaction(tx);
  return { raw, hash: keccak256(raw) };
}

/** How the node refused a broadcast, as far as our nonce bookkeeping is concerned. */
function refusal(error: unknown): "known" | "nonce" | "other" {
  const text = fullText(error);
  if (/already known|known transaction|already imported/i.test(text)) return "known";
  if (
    /nonce too low|nonce.*(already|used)|replacement transaction underpriced|underpriced/i.test(
      text,
    )
  ) {
    return "nonce";
  }
  return "other";
}

type Sent =
  | {
      readonly kind: "sent";
      readonly hash: Hex;
      readonly nonce: number;
      readonly tx: TransactionSerializable;
    }
  | { readonly kind: "retry" }
  | { readonly kind: "outcome"; readonly outcome: CallOutcome };

export async function executeCall(
  ctx: SchemeContext,
  call: ContractCall,
  waitUntil: WaitUntil,
  record: SettlementRecord,
): Promise<CallOutcome> {
  const lane = ctx.signers.next();
  if (!lane) {
    return failed(
      failure(
        "settlement_failed",
        "no settlement key configured: set FACILITATOR_PRIVATE_KEY or pass --private-key-file",
        { status: 500 },
      ),
    );
  }
  const { client } = ctx;

  let gas: bigint;
  let fees: Fees;
  const reused =
    record.gasKey && hasGasEstimate(record.gasKey) ? gasEstimates.get(record.gasKey) : undefined;
  try {
    if (reused) {
      gas = (reused.gas * REUSED_GAS_PERCENT) / 100n;
      fees = await estimateFees(ctx);
    } else {
      // Estimating gas executes the call from our account: a payment that would revert stops here.
      const [estimate, estimatedFees] = await Promise.all([
        client.estimateGas({ account: lane.address, to: call.to, data: call.data }),
        estimateFees(ctx),
      ]);
      if (record.gasKey) gasEstimates.set(record.gasKey, { at: Date.now(), gas: estimate });
      gas = (estimate * GAS_HEADROOM_PERCENT) / 100n;
      fees = estimatedFees;
    }
  } catch (error) {
    if (isRevert(error) && !isUnreachable(error)) {
      return { kind: "would-revert", reason: revertReason(error), detail: shortText(error) };
    }
    if (isUnreachable(error)) lane.forget(ctx.chainId);
    return infrastructure(error, "preparing the settlement transaction");
  }
  const capped = overCap(ctx, gas, fees);
  if (capped) return failed(capped);
  const base = { ...fees, chainId: ctx.chainId, to: call.to, data: call.data, gas };

  if (waitUntil === "simulated") {
    try {
      const nonce = await client.getTransactionCount({
        address: lane.address,
        blockTag: "pending",
      });
      const { hash } = await sign(lane.account, { ...base, nonce });
      const { type: _type, chainId: _chainId, ...params } = base;
      await client.call({ ...params, nonce, account: lane.address, blockTag: "latest" });
      return { kind: "simulated", hash };
    } catch (error) {
      if (isRevert(error) && !isUnreachable(error)) {
        return { kind: "would-revert", reason: revertReason(error), detail: shortText(error) };
      }
      return infrastructure(error, "simulating the settlement transaction");
    }
  }

  let sent: Sent = { kind: "retry" };
  for (let attempt = 0; attempt < SEND_ATTEMPTS && sent.kind === "retry"; attempt++) {
    // The lane only hands out the nonce and signs. The journal record is then made durable and
    // the transaction broadcast outside it, so concurrent settles share one disk sync and the
    // next nonce is signed meanwhile. Broadcasts may reach the node out of nonce order; it queues
    // them. Any failure makes the lane re-read its nonce from the node, so an unused nonce is
    // handed out again and no gap stays open.
    const issued = await lane.withNonce(client, ctx.chainId, async (nonce) => {
      const tx = { ...base, nonce };
      const { raw, hash } = await sign(lane.account, tx);
      const durable = ctx.journal.recordSend(
        {
          key: record.key,
          chainId: ctx.chainId,
          signer: lane.address,
          txNonce: nonce,
          expect: record.expect,
        },
        hash,
        raw,
      );
      durable.catch(() => undefined);
      return { consumed: true, value: { hash, nonce, tx, raw, durable } };
    });
    try {
      await issued.durable;
    } catch (error) {
      // Not durable, so never sent: no later settle may pick this record up and broadcast it.
      void ctx.journal.recordState(record.key, "failed").catch(() => undefined);
      lane.forget(ctx.chainId);
      return failed(
        failure("settlement_failed", `cannot write the settlement journal: ${shortText(error)}`, {
          status: 500,
        }),
      );
    }
    try {
      const receipt = await broadcast(ctx, issued.raw, issued.hash, waitUntil === "confirmed");
      if (receipt) return mined(ctx, record.key, receipt);
      sent = { kind: "sent", hash: issued.hash, nonce: issued.nonce, tx: issued.tx };
    } catch (error) {
      const { consumed, value } = sendFailure(ctx, lane, record.key, error, issued);
      if (!consumed) lane.forget(ctx.chainId);
      sent = value;
    }
  }
  if (sent.kind === "retry") {
    void ctx.journal.recordState(record.key, "failed").catch(() => undefined);
    return failed(
      failure("settlement_failed", "the node kept refusing our nonce; try again", { status: 500 }),
    );
  }
  if (sent.kind === "outcome") return sent.outcome;
  if (waitUntil === "submitted") {
    await ctx.journal.recordState(record.key, "answered").catch(() => undefined);
    return { kind: "submitted", hash: sent.hash };
  }
  return follow(ctx, lane, record.key, [sent.hash], sent.tx, fees);
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
 * Re-sending the same bytes is harmless (same hash, same nonce), so when the synchronous call fails
 * in a way that says nothing about the transaction, the plain method sends them again.
 */
async function broadcast(
  ctx: SchemeContext,
  raw: Hex,
  hash: Hex,
  wantReceipt: boolean,
): Promise<TransactionReceipt | undefined> {
  const { client } = ctx;
  if (!wantReceipt || withoutSync.has(client)) {
    await client.sendRawTransaction({ serializedTransaction: raw });
    return undefined;
  }
  const answer = client
    .sendRawTransactionSync({ serializedTransaction: raw, throwOnReceiptRevert: false })
    .then(
      (receipt) => ({ receipt }),
      (error: unknown) => ({ error }),
    );
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<undefined>((resolve) => {
    const waitMs = Math.min(SYNC_WAIT_MS, ctx.replaceAfterMs, ctx.confirmTimeoutMs);
    timer = setTimeout(() => resolve(undefined), waitMs);
  });
  const result = await Promise.race([answer, waited]);
  clearTimeout(timer);
  // Still waiting: the node took the transaction and it is not mined yet; polling takes over.
  if (result === undefined) return undefined;
  if ("receipt" in result) {
    return isHashEqual(result.receipt.transactionHash, hash) ? result.receipt : undefined;
  }
  const { error } = result;
  // The node took it but gave up waiting for a block (EIP-7966 code 4, anvil says "timeout").
  if (!isUnreachable(error) && /time(d)?\s?out/i.test(fullText(error))) return undefined;
  if (isUnreachable(error) || isRevert(error) || refusal(error) !== "other") throw error;
  try {
    await client.sendRawTransaction({ serializedTransaction: raw });
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

function isKnown(ctx: SchemeContext, hash: Hex): Promise<boolean> {
  return ctx.client.getTransaction({ hash }).then(
    () => true,
    () => false,
  );
}

const isHashEqual = (a: Hex, b: Hex) => a.toLowerCase() === b.toLowerCase();

/** The outcome of a mined transaction. */
function mined(ctx: SchemeContext, key: string, receipt: TransactionReceipt): CallOutcome {
  if (receipt.status !== "success") {
    void ctx.journal.recordState(key, "failed").catch(() => undefined);
    // It may have run out of gas on a reused estimate: estimate afresh next time.
    gasEstimates.clear();
    return { kind: "reverted", hash: receipt.transactionHash, receipt };
  }
  return { kind: "confirmed", hash: receipt.transactionHash, receipt };
}

function sendFailure(
  ctx: SchemeContext,
  lane: SignerLane,
  key: string,
  error: unknown,
  attempt: { hash: Hex; nonce: number; tx: TransactionSerializable },
): { consumed: boolean; value: Sent } {
  const outcome = (o: CallOutcome, consumed = false) => ({
    consumed,
    value: { kind: "outcome", outcome: o } as Sent,
  });
  if (neverReachedNode(error)) {
    void ctx.journal.recordState(key, "failed").catch(() => undefined);
    lane.forget(ctx.chainId);
    return outcome(infrastructure(error, "broadcasting"));
  }
  if (isUnreachable(error)) {
    // The node may have taken it before the connection broke: keep the hash, never re-send.
    return outcome(
      pending(
        attempt.hash,
        `the broadcast's answer was lost (${shortText(error)}); the transaction may be pending`,
      ),
      true,
    );
  }
  switch (refusal(error)) {
    case "known":
      return { consumed: true, value: { kind: "sent", ...attempt } };
    case "nonce":
      // Someone else (another process, an earlier run) holds this nonce: re-read and try again.
      lane.forget(ctx.chainId);
      return { consumed: false, value: { kind: "retry" } };
    default:
      void ctx.journal.recordState(key, "failed").catch(() => undefined);
      if (isRevert(error)) {
        return outcome({
          kind: "would-revert",
          reason: revertReason(error),
          detail: shortText(error),
        });
      }
      return outcome(infrastructure(error, "the node refused the transaction"));
  }
}

/**
 * A local node (anvil, hardhat) mines a transaction as soon as it is ready. One still unmined a
 * second later, while blocks go by, was parked by the node: anvil's pool can file a transaction as
 * waiting for a predecessor that is being mined at that moment, and then never look at it again.
 * Only a new transaction at the same nonce wakes it, and there a replacement costs nothing.
 */
const LOCAL_PARKED_AFTER_MS = 1_000;
const localNodes = new WeakMap<object, Promise<boolean>>();

function isLocalNode(client: SchemeContext["client"]): Promise<boolean> {
  let known = localNodes.get(client);
  if (!known) {
    known = client.request({ method: "web3_clientVersion" }).then(
      (version) => /^(anvil|hardhat)/i.test(String(version)),
      () => {
        localNodes.delete(client);
        return false;
      },
    );
    localNodes.set(client, known);
  }
  return known;
}

/** Whether a local node passed over our transaction: it automines, or blocks came since. */
async function parkedOnLocalNode(ctx: SchemeContext, sinceBlock: bigint | undefined) {
  const [automines, block] = await Promise.all([
    ctx.client.request({ method: "anvil_getAutomine" } as never).then(
      (answer) => answer === true,
      () => false,
    ),
    ctx.client.getBlockNumber({ cacheTime: 0 }).catch(() => undefined),
  ]);
  return automines || (sinceBlock !== undefined && block !== undefined && block > sinceBlock);
}

/**
 * Waits for any of `hashes` to be mined, replacing the transaction with a higher fee at the same
 * nonce whenever it sits in the mempool for `replaceAfterMs`. Never throws: past the deadline, the
 * answer is `settlement_pending` with the newest hash.
 */
async function follow(
  ctx: SchemeContext,
  lane: SignerLane,
  key: string,
  hashes: Hex[],
  tx: TransactionSerializable,
  fees: Fees,
): Promise<CallOutcome> {
  const deadline = Date.now() + ctx.confirmTimeoutMs;
  let replaceAt = Date.now() + ctx.replaceAfterMs;
  const local = await isLocalNode(ctx.client);
  const sinceBlock = local
    ? await ctx.client.getBlockNumber({ cacheTime: 0 }).catch(() => undefined)
    : undefined;
  let parkedCheckAt = local ? Date.now() + LOCAL_PARKED_AFTER_MS : Number.POSITIVE_INFINITY;
  let current = fees;
  for (let poll = 0; ; poll++) {
    const receipts = await Promise.all(
      hashes.map((hash) => ctx.client.getTransactionReceipt({ hash }).catch(() => undefined)),
    );
    const receipt = receipts.find((r) => r !== undefined);
    if (receipt) return mined(ctx, key, receipt);
    const now = Date.now();
    if (now >= deadline) {
      const newest = hashes[hashes.length - 1] as Hex;
      return pending(
        newest,
        `no receipt within ${Math.round(ctx.confirmTimeoutMs / 1000)} s; the transaction is pending, retry the same payment to reconcile`,
      );
    }
    if (now >= parkedCheckAt) {
      parkedCheckAt = now + LOCAL_PARKED_AFTER_MS;
      if (await parkedOnLocalNode(ctx, sinceBlock)) replaceAt = now;
    }
    if (now >= replaceAt) {
      replaceAt = now + ctx.replaceAfterMs;
      const next = bump(current);
      if (!overCap(ctx, tx.gas ?? 0n, next)) {
        const replacement = await replace(ctx, lane, key, {
          ...tx,
          ...next,
        } as TransactionSerializable);
        if (replacement) {
          hashes.push(replacement);
          current = next;
        }
      }
    }
    // Fast chains (and a local node) mine within milliseconds: look again soon at first, then
    // settle into the configured interval.
    const wait = Math.min(FIRST_POLLS_MS[poll] ?? ctx.receiptPollMs, ctx.receiptPollMs);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.min(wait, Math.max(1, deadline - now))),
    );
  }
}

/** Signs `tx` again (same nonce, higher fee), journals it, broadcasts it; the new hash or nothing. */
async function replace(
  ctx: SchemeContext,
  lane: SignerLane,
  key: string,
  tx: TransactionSerializable,
) {
  try {
    const { raw, hash } = await sign(lane.account, tx);
    await ctx.journal.recordReplace(key, hash, raw);
    await ctx.client.sendRawTransaction({ serializedTransaction: raw });
    return hash;
  } catch {
    // Mined meanwhile ("nonce too low"), or the node wants more: the next poll tells.
    return undefined;
  }
}

/**
 * Picks a journaled settlement back up: its receipt if mined; otherwise wait for it (replacing it
 * if stuck); if the node lost it and its nonce is still free, broadcast the same bytes again.
 * "gone" means the transaction can never land (its nonce went to another): start afresh.
 */
export async function reconcile(
  ctx: SchemeContext,
  entry: JournalEntry,
): Promise<CallOutcome | "gone"> {
  const { client } = ctx;
  const lane = ctx.signers.byAddress(entry.signer);
  try {
    for (const hash of entry.hashes) {
      const receipt = await client.getTransactionReceipt({ hash }).catch((error: unknown) => {
        if (isUnreachable(error)) throw error;
        return undefined;
      });
      if (receipt) return mined(ctx, entry.key, receipt);
    }
    const newestRaw = entry.raws[entry.raws.length - 1] as Hex;
    const tx = parseTransaction(newestRaw) as TransactionSerializable;
    const fees: Fees =
      tx.type === "legacy"
        ? { type: "legacy", gasPrice: tx.gasPrice ?? 0n }
        : {
            type: "eip1559",
            maxFeePerGas: tx.maxFeePerGas ?? 0n,
            maxPriorityFeePerGas: tx.maxPriorityFeePerGas ?? 0n,
          };
    const known = await Promise.all(entry.hashes.map((hash) => isKnown(ctx, hash)));
    if (!known.some(Boolean)) {
      const used = await client.getTransactionCount({ address: entry.signer, blockTag: "latest" });
      if (used > entry.txNonce) return "gone";
      if (!lane) {
        return failed(
          failure(
            "settlement_failed",
            `the journaled transaction's signer ${entry.signer} is not configured`,
            { status: 500 },
          ),
          entry.hashes[entry.hashes.length - 1],
        );
      }
      // Lost before it reached a node (a crash between journal and broadcast): the same bytes again.
      const resent = await lane.exclusive(async () => {
        try {
          await client.sendRawTransaction({ serializedTransaction: newestRaw });
          lane.observe(ctx.chainId, entry.txNonce);
          return true;
        } catch (error) {
          if (isUnreachable(error)) throw error;
          return refusal(error) === "known";
        }
      });
      if (!resent) return "gone";
    }
    if (!lane) {
      return pending(
        entry.hashes[entry.hashes.length - 1] as Hex,
        "the journaled transaction is still pending",
      );
    }
    return follow(ctx, lane, entry.key, [...entry.hashes], tx, fees);
  } catch (error) {
    const newest = entry.hashes[entry.hashes.length - 1] as Hex;
    return pending(
      newest,
      `cannot reach the chain to reconcile (${shortText(error)}); retry later`,
    );
  }
}

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const topicOf = (address: string) => padHex(address.toLowerCase() as Hex, { size: 32 });

/** Whether the receipt carries the ERC-20 Transfer that proves the payment. */
export function receiptHasTransfer(receipt: TransactionReceipt, expect: ExpectedTransfer): boolean {
  return receipt.logs.some(
    (log) =>
      isAddressEqual(log.address, expect.token) &&
      log.topics[0] === TRANSFER_TOPIC &&
      log.topics[1]?.toLowerCase() === topicOf(expect.from) &&
      log.topics[2]?.toLowerCase() === topicOf(expect.to) &&
      BigInt(log.data) === BigInt(expect.value),
  );
}
