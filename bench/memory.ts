/**
 * Memory per payer: what the serving thread keeps for each distinct payer that settles, through
 * the parts a settlement passes (issue 40, item 6). Each payer settles once: its rate bucket is
 * taken (and the payee's), its settlement is remembered per payer and per asset (who settled with
 * us), its landing is counted against the wasted-gas budget, one in ten reverts first (the payer
 * throttle), and it raises a channel's highest voucher (batch-settlement's scheme state). No
 * chain: these are the maps a settle leaves behind, not its work.
 *
 *   node --expose-gc --import tsx bench/memory.ts [PAYERS...]   (default 150000 200000)
 *
 * Prints, per count, the heap used and the RSS after a full collection, in MiB, and whether any
 * payer was refused (none may be: each settles once, far under every limit).
 */
import { SettlementRate } from "../src/core/settle-rate.js";
import { PayerThrottle } from "../src/core/throttle.js";
import { GasAtRisk } from "../src/evm/chain/gas-at-risk.js";
import { JournalSchemeState } from "../src/store/journal-scheme-state.js";
import { SettledBy } from "../src/store/journal-settled.js";

const CHAIN = 8453;
const ASSET = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";

export interface MemoryPoint {
  readonly payers: number;
  readonly heapMiB: number;
  readonly rssMiB: number;
  readonly refused: number;
}

/** A distinct hex string of `bytes` bytes for each `n` (and `salt`), as an address or nonce is. */
const hex = (bytes: number, n: number, salt = 0) =>
  `0x${(n * 7919 + salt).toString(16).padStart(2 * bytes, "0")}`;
const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("run with node --expose-gc");
  gc();
  gc();
}

/** Settles `counts` (ascending) distinct payers through the maps, measuring at each count. */
export function measure(counts: readonly number[]): MemoryPoint[] {
  const rate = new SettlementRate(60);
  const throttle = new PayerThrottle();
  const gas = new GasAtRisk(throttle);
  const settled = new SettledBy();
  const scheme = new JournalSchemeState();
  const points: MemoryPoint[] = [];
  let refused = 0;
  let payers = 0;
  for (const count of counts) {
    for (; payers < count; payers++) {
      const payer = hex(20, payers);
      // A thousand sellers, each paid by one payer in a thousand.
      const payee = hex(20, payers % 1000, 1);
      const taken = rate.take({ payers: [payer], payees: [payee] });
      if (!taken.ok) refused++;
      if (payers % 10 === 0) throttle.charge(CHAIN, payer);
      if (throttle.refusal(CHAIN, payer)) refused++;
      const key = `eip3009:${CHAIN}:${ASSET}:${payer}:${hex(32, payers, 2)}`;
      const expect = { token: ASSET, from: payer, to: payee, value: "10000" } as const;
      settled.remember(`eip155:${CHAIN}`, key, expect as never, Date.now());
      gas.settled(CHAIN, payer, ASSET);
      scheme.raise("batch-settlement:voucher", hex(32, payers, 3), 10_000n, undefined);
      scheme.owed();
    }
    collect();
    const usage = process.memoryUsage();
    points.push({ payers: count, heapMiB: mib(usage.heapUsed), rssMiB: mib(usage.rss), refused });
  }
  return points;
}

if (process.argv[1]?.endsWith("memory.ts")) {
  const counts = process.argv.slice(2).map(Number);
  collect();
  const base = process.memoryUsage();
  console.log(
    JSON.stringify({
      baseline: { heapMiB: mib(base.heapUsed), rssMiB: mib(base.rss) },
      points: measure(counts.length > 0 ? counts : [150_000, 200_000]),
    }),
  );
}
