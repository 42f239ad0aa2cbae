/** A payment's transaction outcome by the money rules: a mined success pays only if its receipt
 * carries the Transfer; ledger and gas at risk hear every outcome. */
import { type Hex, isAddressEqual, type TransactionReceipt } from "viem";
import { Success } from "../../core/settle-loop.js";
import type { EntryState, JournalEntry } from "../../core/store.js";
import { failed, failure } from "../../protocol/errors.js";
import type { SettleResult } from "../../protocol/results.js";
import { type EvmTransfer, evmEntry } from "../chain/entry.js";
import type { CallOutcome } from "../chain/outcome.js";
import { receiptHasTransfer } from "../chain/receipts.js";
import type { EvmContext } from "../context.js";

/** The journaled transfer moves the same token to the same recipient, the same value. */
export function sameTransfer(expect: EvmTransfer, entry: JournalEntry): boolean {
  const journaled = evmEntry(entry).expect;
  return (
    journaled !== undefined &&
    isAddressEqual(expect.to, journaled.to) &&
    expect.value === journaled.value &&
    isAddressEqual(expect.token, journaled.token)
  );
}

/** A journaled settlement of another payment holds this nonce. */
export const nonceTaken = (
  entry: JournalEntry,
  nonce = "authorization nonce",
  x402Reason?: string,
) =>
  failure(
    "nonce_already_used",
    `this ${nonce} is already being settled for another payment (${entry.hashes.at(-1)})`,
    { x402Reason },
  );

/** Writes a settlement's state down; should the store fail, only the note is lost. */
export const noteState = (ctx: EvmContext, key: string, state: EntryState) =>
  ctx.journal.recordState(key, state).catch(() => undefined);

/** Keeps the in-flight ledger and the gas at risk in step with what a send came to. */
export function track(
  ctx: EvmContext,
  key: string,
  expect: EvmTransfer,
  outcome: CallOutcome,
  /** The payer is a contract wallet: its signature check ran in our transaction. */
  contractWallet = false,
): void {
  switch (outcome.kind) {
    case "confirmed":
      ctx.inflight.landed(key, outcome.receipt.blockNumber);
      return;
    case "reverted":
      ctx.inflight.landed(key, outcome.receipt.blockNumber, false);
      ctx.gasAtRisk.charge(ctx.chainId, {
        payer: expect.from,
        asset: expect.token,
        gas: outcome.receipt.gasUsed,
        // A contract wallet's own code may be what burned the gas: its doing, not the token's.
        cause: outcome.outOfGas && !contractWallet ? "out-of-gas" : "reverted",
      });
      return;
    case "simulated":
    case "would-revert":
      ctx.inflight.release(key);
      return;
    case "submitted":
      if (ctx.watchSubmitted) void watchLanding(ctx, key, expect, outcome.hash, contractWallet);
      return;
    case "failed":
      // With a hash it may still land: its reservation stays until it does.
      if (!outcome.hash) ctx.inflight.release(key);
  }
}

/** A mined success: it paid (payer and asset are known from now on), or it moved nothing. */
export function judgeLanded(
  ctx: EvmContext,
  expect: EvmTransfer,
  receipt: TransactionReceipt,
): boolean {
  if (receiptHasTransfer(receipt, expect)) {
    ctx.gasAtRisk.settled(ctx.chainId, expect.from, expect.token);
    return true;
  }
  ctx.gasAtRisk.charge(ctx.chainId, {
    payer: expect.from,
    asset: expect.token,
    gas: receipt.gasUsed,
    cause: "no-transfer",
  });
  return false;
}

/** Watches a payment answered `submitted` until it lands, so its reservation ends and a revert is charged. */
async function watchLanding(
  ctx: EvmContext,
  key: string,
  expect: EvmTransfer,
  hash: Hex,
  contractWallet: boolean,
) {
  const deadline = Date.now() + ctx.confirmTimeoutMs;
  const every = Math.max(ctx.receiptPollMs, 500);
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, every).unref());
    const receipt = await ctx.client.getTransactionReceipt({ hash }).catch(() => undefined);
    if (!receipt) continue;
    if (receipt.status === "success") {
      track(ctx, key, expect, { kind: "confirmed", hash, receipt });
      judgeLanded(ctx, expect, receipt);
      return;
    }
    void noteState(ctx, key, "failed");
    const sent = await ctx.client.getTransaction({ hash }).catch(() => undefined);
    const outOfGas = sent !== undefined && receipt.gasUsed >= sent.gas;
    track(ctx, key, expect, { kind: "reverted", hash, receipt, outOfGas }, contractWallet);
    return;
  }
}

/** A success whose transaction can never land is settled afresh, recorded but answered
 * `nonce_already_used` with the new hash (one success per payment). */
export function answeredAgain(
  sent: SettleResult | Success<SettleResult>,
  earlier: string,
): SettleResult | Success<SettleResult> {
  if (!(sent instanceof Success) || !sent.result.ok) return sent;
  const hash = sent.result.transactionHash;
  const result: SettleResult = {
    ...failed(
      "nonce_already_used",
      `this authorization was already answered in ${earlier}, which can never land (its nonce went to another transaction); it was sent afresh in ${hash}`,
    ),
    payer: sent.result.payer,
    transactionHash: hash,
  };
  return new Success(result, sent.keys, sent.unrecorded, sent.mined);
}
