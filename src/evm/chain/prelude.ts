/** Transactions that must land before the payment (permit, approval), each through the settle
 * loop as `key#name`: the money rules hold and a retry picks it up where it was. */
import { type Address, type Hex, keccak256, type TransactionReceipt } from "viem";
import {
  inProgress,
  type MaySend,
  type Outcome,
  type SettleSteps,
  Success,
  settleInTurn,
} from "../../core/settle-loop.js";
import { type Chargeable, isAnswered, type JournalEntry } from "../../core/store.js";
import { failure } from "../../protocol/errors.js";
import { caip2 } from "../../protocol/networks.js";
import { isUnreachable } from "../../rpc/rpc.js";
import { refusal, sendRaw } from "./broadcast.js";
import { evmEntry } from "./entry.js";
import { chargeWaste } from "./gas-at-risk.js";
import type { GasNeed } from "./gas-bounds.js";
import {
  type CallOutcome,
  type ContractCall,
  failed,
  pending,
  shortText,
  unjournaled,
} from "./outcome.js";
import { lookUp, reconcile } from "./reconcile.js";
import {
  type Funding,
  fundedLanded,
  fundedWasted,
  fundPayer,
  type SponsoringAccess,
} from "./sponsoring.js";
import type { PreparedCall, SendingAccess } from "./transactions.js";
import { prepareCall, sendCall } from "./transactions.js";

export interface Prelude {
  /** Unique within the settlement: "permit", "approve". */
  readonly name: string;
  /** Our call, or the payer's signed bytes (with the gas it lacks sent first: `fund`). */
  readonly tx:
    | { readonly call: ContractCall; readonly gas: GasNeed }
    | (PayersTransaction & { readonly fund?: Funding | undefined });
  /** False: the chain has what it does already, it is skipped. */
  readonly needed: (ctx: SendingAccess) => Promise<boolean>;
}

/** The payer's own signed transaction (checked as its: `from` signed it, at `nonce`). */
export interface PayersTransaction {
  readonly raw: Hex;
  readonly from: Address;
  readonly nonce: number;
}

/** Why the preludes stopped; `payersFault`: its own transaction failed, still to be charged. */
export interface Stopped {
  readonly outcome: CallOutcome;
  readonly payersFault: boolean;
}

type Stop = { readonly ok: false } & Stopped;
type Landing = { readonly ok: true } | Stop;
const LANDED: Landing = { ok: true };

type Ready = { readonly call: PreparedCall } | PayersTransaction;

const POLL_MS = 250;

/** Lands each prelude in turn, confirmed before the next; undefined once all landed. A payer's
 * failure wasting gas we sent it is charged here, so not `payersFault`. */
export async function landPreludes(
  ctx: SponsoringAccess,
  key: string,
  preludes: readonly Prelude[],
  signer: Address | undefined,
  chargeTo: Chargeable,
  may: MaySend,
): Promise<Stopped | undefined> {
  const earlier = await followEarlierFunding(ctx, key, may);
  if (earlier) return stopping("the gas sent to the payer before", earlier);
  for (const prelude of preludes) {
    const steps = preludeSteps(ctx, `${key}#${prelude.name}`, prelude, signer, chargeTo);
    const landing = await settleInTurn(ctx, steps, "confirmed");
    if (!landing.ok) return landing;
  }
  return undefined;
}

/** Gas journaled as `key#fund` by older versions: followed to its end, never sent again. */
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

function preludeSteps(
  ctx: SponsoringAccess,
  key: string,
  prelude: Prelude,
  signer: Address | undefined,
  chargeTo: Chargeable,
): SettleSteps<Ready, Landing> {
  const tx = prelude.tx;
  const fund = "raw" in tx ? tx.fund : undefined;
  const stop = (outcome: CallOutcome) => stopping(whatOf(prelude), outcome);
  const ended = async (outcome: CallOutcome): Promise<Outcome<Landing>> => {
    if (outcome.kind !== "confirmed") return stopped(ctx, prelude, chargeTo, outcome);
    if (fund) await fundedLanded(ctx, fund);
    const why = "it landed, and the store could not record it; retry";
    return new Success(LANDED, [key], stop(pending(outcome.hash, why)));
  };
  return {
    key,
    busy: () => stop(failed(inProgress())),
    async pickUp(entry, _waitUntil, may) {
      if (isAnswered(entry.state)) return LANDED;
      if ((entry.state !== "broadcast" && entry.state !== "landed") || !may) return undefined;
      const picked =
        "raw" in tx ? await followRaw(ctx, entry, may) : await reconcile(ctx, entry, may);
      if (picked !== "gone") return ended(picked);
      await ctx.journal.recordState(key, "dropped").catch(() => undefined);
      // The payer's nonce went to another of its transactions: what we sent it for this is wasted.
      if (fund) await fundedWasted(ctx, fund);
      return undefined;
    },
    async prepare() {
      const over = await ctx.gasAtRisk.refusal(ctx.chainId, chargeTo.payer, chargeTo.asset);
      if (over) return { ok: false, result: stop(failed(over)) };
      if (!(await prelude.needed(ctx))) return { ok: false, result: LANDED };
      if ("raw" in tx) return { ok: true, value: tx };
      const call = await prepareCall(ctx, tx.call, tx.gas, { signer });
      return "kind" in call ? { ok: false, result: stop(call) } : { ok: true, value: { call } };
    },
    // Never reached: a settlement with preludes is not dry-run.
    simulate: async () =>
      stop(failed(failure("invalid_request", `${whatOf(prelude)} cannot be dry-run`))),
    hold: async () => undefined,
    async send(ready, _waitUntil, may) {
      if ("call" in ready) {
        const action = { name: prelude.name, chargeTo: [chargeTo] };
        return ended(await sendCall(ctx, ready.call, "confirmed", { key, action }, may));
      }
      const unfunded = fund && (await fundPayer(ctx, fund, signer, may));
      const what = `the gas for the payer's ${prelude.name} transaction, which must land before the payment`;
      if (unfunded) return stopping(what, unfunded);
      return ended(await sendPayers(ctx, key, ready, may));
    },
  };
}

/** A prelude that did not land: ours reverted is charged as waste; the payer's costs what we sent. */
async function stopped(
  ctx: SponsoringAccess,
  prelude: Prelude,
  chargeTo: Chargeable,
  outcome: CallOutcome,
): Promise<Landing> {
  const tx = prelude.tx;
  if (outcome.kind === "reverted" && !("raw" in tx)) chargeWaste(ctx, [chargeTo], outcome.receipt);
  const stoppedAt = stopAt(whatOf(prelude), outcome);
  const refused =
    stoppedAt.kind === "failed" &&
    stoppedAt.failure.code === "settlement_failed" &&
    stoppedAt.failure.status !== 500;
  // The payer's refused: charged with what we sent for it, if we did; else as costing us nothing.
  const payersFault = "raw" in tx && refused && !(tx.fund && (await fundedWasted(ctx, tx.fund)));
  return { ok: false, outcome: stoppedAt, payersFault };
}

const stopping = (what: string, outcome: CallOutcome): Stop => ({
  ok: false,
  outcome: stopAt(what, outcome),
  payersFault: false,
});

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
async function sendPayers(
  ctx: SendingAccess,
  key: string,
  { raw, from, nonce }: PayersTransaction,
  may: MaySend,
): Promise<CallOutcome> {
  const hash = keccak256(raw);
  const entry = { key, network: caip2(ctx.chainId), signer: from, txNonce: nonce };
  try {
    await ctx.journal.recordSend(entry, hash, raw);
  } catch (error) {
    return unjournaled(error);
  }
  try {
    await sendRaw(ctx, raw, may);
  } catch (error) {
    if (isUnreachable(error))
      return pending(hash, `the broadcast's answer was lost (${shortText(error)})`);
    if (refusal(error) !== "known") {
      void ctx.journal.recordState(key, "failed").catch(() => undefined);
      const why = `the node refused the payer's transaction: ${shortText(error)}`;
      return failed(failure("settlement_failed", why));
    }
  }
  return awaitReceipt(ctx, key, hash, from, nonce);
}

/** Picks up the payer's journaled transaction: its receipt, or the same bytes again if lost. */
async function followRaw(
  ctx: SendingAccess,
  journaled: JournalEntry,
  may: MaySend,
): Promise<CallOutcome | "gone"> {
  const entry = evmEntry(journaled);
  const hash = entry.hashes[0] as Hex;
  const raw = entry.raws[0];
  try {
    const seen = await lookUp(ctx, entry);
    if (seen.receipt) return receiptOutcome(seen.receipt);
    if (!seen.inPool) {
      if (seen.nonceUsed || !raw) return "gone";
      await sendRaw(ctx, raw, may).catch(() => undefined);
    }
    return awaitReceipt(ctx, entry.key, hash, entry.signer, entry.txNonce);
  } catch (error) {
    return pending(
      hash,
      `cannot reach the chain to follow the payer's transaction (${shortText(error)})`,
    );
  }
}

/** Waits for the payer's transaction: its receipt, or its end once its nonce went to another. */
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
      const why = `the payer's transaction ${hash} can never land: its nonce ${nonce} went to another transaction of the payer's`;
      return failed(failure("settlement_failed", why), hash);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, ctx.receiptPollMs)));
  }
  return pending(
    hash,
    "the payer's transaction was broadcast and is not mined yet; retry to reconcile",
  );
}

function receiptOutcome(receipt: TransactionReceipt): CallOutcome {
  return receipt.status === "success"
    ? { kind: "confirmed", hash: receipt.transactionHash, receipt }
    : { kind: "reverted", hash: receipt.transactionHash, receipt, outOfGas: false };
}
