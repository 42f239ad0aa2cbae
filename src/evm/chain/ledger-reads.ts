/** The in-flight ledger's reads on an EVM chain: balance or allowance at a block, and what landed. */
import { type Address, erc20Abi } from "viem";
import {
  balanceShortfall,
  type HeldSpend,
  inFlightNote,
  type LedgerReads,
  type PointRead,
} from "../../core/ledger-reads.js";
import { tokenAmount } from "../../protocol/amounts.js";
import { type Failure, failure } from "../../protocol/errors.js";
import type { ChainAccess } from "./access.js";
import type { EvmTransfer } from "./entry.js";
import { firstReceipt } from "./receipts.js";
import { keptTokenUnits } from "./token-units.js";

/** What a settlement takes from an account when it lands. */
export interface Spend {
  readonly token: Address;
  readonly owner: Address;
  readonly amount: bigint;
  /** For a spend through an allowance (Permit2): the spender it was granted to. */
  readonly spender?: Address | undefined;
}

/** The ledger's name for what a spend takes from: chain:token:owner(>spender), lower case. */
export function slotOf(chainId: number, spend: Spend): string {
  const base = `${chainId}:${spend.token}:${spend.owner}`;
  return (spend.spender ? `${base}>${spend.spender}` : base).toLowerCase();
}

/** What a journaled transfer holds, as the ledger counts it (seeding it). */
export function heldByTransfer(chainId: number, expect: EvmTransfer): HeldSpend[] {
  const spend = { token: expect.token, owner: expect.from, amount: BigInt(expect.value) };
  return [{ slot: slotOf(chainId, spend), amount: spend.amount }];
}

/** The ledger's reads of spends on `ctx`'s chain. */
export const evmLedgerReads = (ctx: ChainAccess): LedgerReads<Spend> => ({
  store: ctx.journal,
  slotOf: (spend) => slotOf(ctx.chainId, spend),
  async read(spends, holds): Promise<PointRead> {
    const block = await ctx.client.getBlockNumber({ cacheTime: 0 });
    const [available, mined] = await Promise.all([
      Promise.all(spends.map((spend) => readAvailable(ctx, spend, block))),
      Promise.all(
        holds.map(async (hold) => {
          const hashes = hold.transactions ?? (await ctx.journal.get(hold.key))?.hashes ?? [];
          return { key: hold.key, block: (await firstReceipt(ctx.client, hashes))?.blockNumber };
        }),
      ),
    ]);
    const landed = new Map<string, bigint>();
    for (const m of mined)
      if (m.block !== undefined && m.block <= block) landed.set(m.key, m.block);
    return { point: block, available, landed };
  },
  shortfall(spend, have, held): Failure {
    const token = keptTokenUnits(ctx.chainId, spend.token);
    const say = (units: bigint) => tokenAmount(units, token);
    if (spend.spender) {
      return failure(
        "allowance_required",
        `the payer allows ${spend.spender} ${say(have)}${inFlightNote(held, say)} and this payment needs ${say(spend.amount)}`,
      );
    }
    return balanceShortfall("the payer", have, held, spend.amount, say);
  },
});

/** The payer's balance, or for a spend through an allowance that allowance, at `blockNumber`. */
function readAvailable(ctx: ChainAccess, spend: Spend, blockNumber: bigint) {
  const read = { address: spend.token, abi: erc20Abi, blockNumber } as const;
  return spend.spender
    ? ctx.client.readContract({
        ...read,
        functionName: "allowance",
        args: [spend.owner, spend.spender],
      })
    : ctx.client.readContract({ ...read, functionName: "balanceOf", args: [spend.owner] });
}
