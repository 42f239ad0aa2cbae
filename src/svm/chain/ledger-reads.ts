/** The in-flight ledger's reads on Solana: balances at one slot, and the holds landed by then. */
import type { Client } from "viem";
import {
  balanceShortfall,
  type HeldSpend,
  type HoldToCheck,
  type LedgerReads,
  type PointRead,
} from "../../core/ledger-reads.js";
import { type JournalEntry, namespaceOf, type SettlementStore } from "../../core/store.js";
import { tokenAmount } from "../../protocol/amounts.js";
import type { Failure } from "../../protocol/errors.js";
import { knownMintSymbol } from "../../protocol/solana-networks.js";
import { signatureStatuses, tokenBalance } from "../exact/rpc.js";
import type { SvmPayment } from "../exact/types.js";

/** The journal's key prefix for Solana settlements: `svm:<network>:<signature>`. */
export const SVM_KEY_PREFIX = "svm:";

/** What a settlement takes from the payer's token account `source` when it lands (decimals: for messages). */
export type SvmSpend = Pick<SvmPayment, "mint" | "source" | "amount"> &
  Partial<Pick<SvmPayment, "decimals">> & { readonly network: string };

/** The ledger's name for what a spend debits. Base58 is case-sensitive: kept as it is. */
function svmSlotOf(spend: Omit<SvmSpend, "amount">): string {
  return `${spend.network}:${spend.mint}:${spend.source}`;
}

/** What `spend` holds, as the ledger counts it. */
export function svmHeld(spend: SvmSpend): HeldSpend {
  return { slot: svmSlotOf(spend), amount: spend.amount };
}

export class SvmLedgerReads implements LedgerReads<SvmSpend> {
  constructor(
    private readonly client: Client,
    readonly store: SettlementStore,
  ) {}

  slotOf(spend: SvmSpend): string {
    return svmSlotOf(spend);
  }

  async read(spends: readonly SvmSpend[], holds: readonly HoldToCheck[]): Promise<PointRead> {
    // A hold of another replica that has sent nothing yet has no signature: it counts.
    const asked = holds.flatMap((h) => {
      const signature = h.transactions?.at(-1);
      return signature ? [{ key: h.key, signature }] : [];
    });
    const [balances, statuses] = await Promise.all([
      Promise.all(spends.map((spend) => tokenBalance(this.client, spend.source))),
      signatureStatuses(
        this.client,
        asked.map((a) => a.signature),
      ),
    ]);
    // Balances of several accounts may come from several slots: the earliest shows the least.
    let read = balances[0]?.slot ?? 0n;
    for (const balance of balances) if (balance.slot < read) read = balance.slot;
    // A `processed` read's slot may still be filling: only the slot before surely shows in it.
    const point = read - 1n;
    const landed = new Map<string, bigint>();
    for (const [i, status] of statuses.entries()) {
      // A failed transaction took nothing: as good as landed for what the balance shows.
      if (status && status.slot <= point)
        landed.set((asked[i] as { key: string }).key, status.slot);
    }
    return { point, available: balances.map((b) => b.amount), landed };
  }

  shortfall(spend: SvmSpend, have: bigint, held: bigint): Failure {
    const token =
      spend.decimals === undefined
        ? undefined
        : { decimals: spend.decimals, symbol: knownMintSymbol(spend.mint) };
    return balanceShortfall(
      `the payer's token account ${spend.source}`,
      have,
      held,
      spend.amount,
      (units) => tokenAmount(units, token),
    );
  }
}

/** A Solana journal entry's spend and transaction, to count it against its payer after a restart. */
export function svmSpendOf(
  entry: JournalEntry,
): { readonly spend: SvmSpend; readonly signature: string } | undefined {
  if (namespaceOf(entry.network) !== "solana" || !entry.expect) return undefined;
  const { network } = entry;
  const { token, from, value } = entry.expect;
  const signature = entry.hashes.at(-1);
  if (!signature) return undefined;
  return { spend: { network, mint: token, source: from, amount: BigInt(value) }, signature };
}
