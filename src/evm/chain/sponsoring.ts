/** Ether for a payer's own signed transaction: it may spend it otherwise and fresh payers are
 * free, so each is funded once until a funded one lands; what is sent is gas at risk till then. */
import type { Address, TransactionReceipt } from "viem";
import type { Answers } from "../../core/answers.js";
import {
  inProgress,
  type MaySend,
  type SettleSteps,
  settleInTurn,
} from "../../core/settle-loop.js";
import { type Failure, failure } from "../../protocol/errors.js";
import type { GasAtRisk, Waste } from "./gas-at-risk.js";
import { type CallOutcome, failed } from "./outcome.js";
import { firstReceipt } from "./receipts.js";
import { reconcile } from "./reconcile.js";
import type { PreparedCall, SendingAccess } from "./transactions.js";
import { prepareCall, sendCall } from "./transactions.js";

export interface SponsoringAccess extends SendingAccess {
  readonly gasAtRisk: GasAtRisk;
  readonly answers: Pick<Answers, "answer">;
}

/** What a payer's own transaction may cost it, for us to send what it lacks. */
export interface Funding {
  readonly payer: Address;
  /** Charged with the payer if the funding is wasted. */
  readonly asset: Address;
  /** Gas limit × fee per gas, as signed: what the node wants it to hold. */
  readonly cost: bigint;
}

const fundingKey = (chainId: number, payer: Address): string =>
  `funding:eip155:${chainId}:${payer.toLowerCase()}`;

const ceilDiv = (a: bigint, b: bigint) => (b > 0n ? (a + b - 1n) / b : a);

type Funded = { readonly ok: true } | { readonly ok: false; readonly outcome: CallOutcome };
const FUNDED: Funded = { ok: true };

type PricedFunding = {
  readonly call: PreparedCall;
  readonly value: bigint;
  readonly atRisk: Waste;
};

/** Sends the payer what its transaction lacks (settle loop, its marker); undefined once it has it. */
export async function fundPayer(
  ctx: SponsoringAccess,
  funding: Funding,
  signer: Address | undefined,
  _may: MaySend,
): Promise<CallOutcome | undefined> {
  const key = fundingKey(ctx.chainId, funding.payer);
  const stop = (outcome: CallOutcome): Funded => ({ ok: false, outcome });
  const busy = `gas for ${funding.payer}'s own transaction is being sent by another settle right now; retry in a moment`;
  const steps: SettleSteps<PricedFunding, Funded> = {
    key,
    busy: () => stop(failed(inProgress(busy))),
    async pickUp(entry, _waitUntil, may) {
      if (entry.state !== "broadcast" || !may) return undefined;
      const picked = await reconcile(ctx, entry, may);
      if (picked === "gone" || picked.kind === "would-revert") {
        await ctx.journal.recordState(key, "dropped").catch(() => undefined);
        ctx.gasAtRisk.release(key);
        return undefined;
      }
      const ended = await fundingEnded(ctx, key, funding, picked);
      return ended ? stop(ended) : undefined;
    },
    async prepare() {
      const balance = await ctx.client.getBalance({ address: funding.payer });
      if (balance >= funding.cost) return { ok: false, result: FUNDED };
      const entry = await ctx.journal.get(key);
      const standing = entry && standingFunding(ctx, entry, funding.payer);
      if (standing) return { ok: false, result: stop(failed(standing)) };
      const value = funding.cost - balance;
      const call = await prepareCall(
        ctx,
        { to: funding.payer, data: "0x" },
        { use: "fund", asset: funding.asset },
        { signer, value },
      );
      if ("kind" in call) return { ok: false, result: stop(call) };
      const { base } = call;
      const price = base.type === "eip1559" ? base.maxFeePerGas : base.gasPrice;
      const atRisk = wasteOf(funding, base.gas + ceilDiv(value, price));
      return { ok: true, value: { call, value, atRisk } };
    },
    simulate: async () =>
      stop(failed(failure("invalid_request", "gas for a payer is never sent in a dry run"))),
    async hold({ atRisk }) {
      const refused = ctx.gasAtRisk.hold(ctx.chainId, key, atRisk);
      return refused ? stop(failed(refused)) : undefined;
    },
    async send({ call, value }, _waitUntil, may) {
      const outcome = await sendCall(ctx, call, "confirmed", { key }, may);
      const ended = await fundingEnded(ctx, key, funding, outcome, value);
      return ended ? stop(ended) : FUNDED;
    },
  };
  const funded = await settleInTurn(ctx, steps, "confirmed");
  return funded.ok ? undefined : funded.outcome;
}

/** The funding's end: undefined once it landed (its payer's transaction is then at risk). */
async function fundingEnded(
  ctx: SponsoringAccess,
  key: string,
  funding: Funding,
  outcome: CallOutcome,
  value?: bigint,
): Promise<CallOutcome | undefined> {
  if (outcome.kind === "confirmed") {
    await ctx.journal.recordState(key, "landed").catch(() => undefined);
    const gas = await worth(ctx, outcome.receipt, value);
    ctx.gasAtRisk.holdSent(ctx.chainId, key, wasteOf(funding, gas));
    return undefined;
  }
  if (outcome.kind === "reverted") {
    ctx.gasAtRisk.chargeHeld(ctx.chainId, key, wasteOf(funding, outcome.receipt.gasUsed));
    await ctx.journal.recordState(key, "failed").catch(() => undefined);
  } else if (!("hash" in outcome) || !outcome.hash) {
    ctx.gasAtRisk.release(key);
  }
  return outcome;
}

/** A payer funded lately whose transaction has not landed (or never will) is not funded again. */
function standingFunding(
  ctx: SponsoringAccess,
  entry: { state: string; updatedAt?: number | undefined; hashes: readonly string[] },
  payer: Address,
): Failure | undefined {
  if (entry.state !== "landed" && entry.state !== "failed") return undefined;
  const now = Date.now();
  const seconds = Math.ceil(((entry.updatedAt ?? now) + ctx.gasAtRisk.windowMs - now) / 1000);
  if (seconds <= 0) return undefined;
  const sent = `${payer} was sent the gas for its own transaction in ${entry.hashes.at(-1)}`;
  const since =
    entry.state === "landed"
      ? "and no transaction of its that we funded has landed since"
      : "and the transaction it was for never landed (its nonce went to another of its transactions)";
  return failure(
    "payer_throttled",
    `${sent}, ${since}: it is not funded again for ${seconds} s, or until an approval of its lands; a payer that holds the gas for its approval needs no funding`,
    { retryAfterSeconds: seconds },
  );
}

/** The payer's transaction landed: no longer at risk, and it may be funded again. */
export async function fundedLanded(ctx: SponsoringAccess, funding: Funding): Promise<void> {
  const key = fundingKey(ctx.chainId, funding.payer);
  ctx.gasAtRisk.release(key);
  await underClaim(ctx, key, async () => {
    const entry = await ctx.journal.get(key);
    if (entry?.state === "landed" || entry?.state === "failed") {
      await ctx.journal.recordState(key, "answered");
    }
  });
}

/** The payer's transaction can never land: its funding is charged once; whether it was now. */
export async function fundedWasted(ctx: SponsoringAccess, funding: Funding): Promise<boolean> {
  const key = fundingKey(ctx.chainId, funding.payer);
  let charged = false;
  await underClaim(ctx, key, async () => {
    const entry = await ctx.journal.get(key);
    if (entry?.state !== "landed") return;
    const gas = ctx.gasAtRisk.heldAt(key)?.gas ?? (await firstWorth(ctx, entry.hashes)) ?? 0n;
    ctx.gasAtRisk.chargeHeld(ctx.chainId, key, wasteOf(funding, gas));
    charged = true;
    await ctx.journal.recordState(key, "failed").catch(() => undefined);
  });
  return charged;
}

/** Runs `then` under the marker's claim; skipped when another holds it (it decides instead). */
async function underClaim(ctx: SponsoringAccess, key: string, then: () => Promise<void>) {
  if (!(await Promise.resolve(ctx.journal.claim(key)).catch(() => false))) return;
  try {
    await then().catch(() => undefined);
  } finally {
    await Promise.resolve(ctx.journal.release(key)).catch(() => undefined);
  }
}

const wasteOf = (funding: Funding, gas: bigint): Waste => ({
  payer: funding.payer,
  asset: funding.asset,
  gas,
  cause: "reverted",
});

/** A funding's worth in gas: what it used, and the ether it carried at the price it paid. */
async function worth(ctx: SponsoringAccess, receipt: TransactionReceipt, value?: bigint) {
  const sent =
    value ??
    (await ctx.client
      .getTransaction({ hash: receipt.transactionHash })
      .then((tx) => tx.value)
      .catch(() => 0n));
  return receipt.gasUsed + ceilDiv(sent, receipt.effectiveGasPrice);
}

async function firstWorth(ctx: SponsoringAccess, hashes: readonly string[]) {
  const receipt = await firstReceipt(ctx.client, hashes);
  return receipt && worth(ctx, receipt);
}
