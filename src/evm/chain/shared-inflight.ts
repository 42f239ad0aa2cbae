/**
 * The in-flight decision when other replicas (on a shared store) hold something for the same
 * payer: the payer's balance must cover what every replica has in flight with it, plus this
 * payment. It runs while the store holds the payer's slots locked for every replica, so no two
 * replicas decide for one payer at once, and keeps that lock short: a balance read of the last few
 * seconds accepts at once if it covers every hold its block does not show (a landed hold stays in
 * the store, with its block, well past that reuse); otherwise the balance is read at one block and
 * the holds that block already includes (marked landed, or found mined) are left out.
 */
import type { Hex } from "viem";
import type { HeldElsewhere } from "../../core/store.js";
import type { Failure } from "../../protocol/errors.js";
import type { ChainAccess } from "./access.js";
import type { InFlight, Spend } from "./inflight.js";
import { minedIn, readAvailable, shortfall } from "./spend-reads.js";

/** As the in-process ledger: a read this recent may accept a settle, never refuse one. */
const READ_REUSE_MS = 5_000;

interface Hold {
  readonly key: string;
  readonly slot: string;
  readonly amount: bigint;
  readonly hashes: readonly Hex[];
  readonly landedIn?: bigint | undefined;
}

export async function decideWithOthers(
  ctx: ChainAccess,
  local: InFlight,
  key: string,
  spends: readonly Spend[],
  slots: readonly string[],
  held: readonly HeldElsewhere[],
): Promise<Failure | undefined> {
  // Settlements of this process count from its own ledger (it knows those not yet in the store).
  const others = held.filter((h) => !local.holds(h.key));
  if (others.length === 0) return undefined;
  const stored = new Map(held.map((h) => [`${h.key} ${h.slot}`, h.hashes]));
  const ours = slots.flatMap((slot) =>
    local
      .heldOn(slot, key)
      .map((h) => ({ ...h, slot, hashes: stored.get(`${h.key} ${slot}`) ?? [] })),
  );
  const holds: Hold[] = [...others, ...ours];
  /** What a balance read at `block` does not show yet on `slot`. */
  const unseen = (slot: string, block: bigint, mined?: ReadonlySet<string>) =>
    holds
      .filter((h) => h.slot === slot && !(h.landedIn !== undefined && h.landedIn <= block))
      .filter((h) => !mined?.has(h.key))
      .reduce((sum, h) => sum + h.amount, 0n);

  const now = Date.now();
  const covered = spends.every((spend, i) => {
    const slot = slots[i] as string;
    const read = local.sharedReads.get(slot);
    return (
      read !== undefined &&
      now - read.at <= READ_REUSE_MS &&
      unseen(slot, read.block) + spend.amount <= read.available
    );
  });
  if (covered) return undefined;

  const block = await ctx.client.getBlockNumber({ cacheTime: 0 });
  const [available, mined] = await Promise.all([
    Promise.all(spends.map((spend) => readAvailable(ctx, spend, block))),
    minedBy(ctx, holds, block),
  ]);
  for (const [i, spend] of spends.entries()) {
    const slot = slots[i] as string;
    const have = available[i] as bigint;
    local.sharedReads.set(slot, { available: have, block, at: now });
    const inFlight = unseen(slot, block, mined);
    if (inFlight + spend.amount > have) return shortfall(spend, have, inFlight);
  }
  return undefined;
}

/** Holds not marked landed whose transaction was mined at or before `block` after all. */
async function minedBy(ctx: ChainAccess, holds: readonly Hold[], block: bigint) {
  const found = await Promise.all(
    holds.map(async (h) => {
      if (h.landedIn !== undefined || h.hashes.length === 0) return undefined;
      const at = await minedIn(ctx, h.hashes);
      return at !== undefined && at <= block ? h.key : undefined;
    }),
  );
  return new Set(found.filter((k): k is string => k !== undefined));
}
