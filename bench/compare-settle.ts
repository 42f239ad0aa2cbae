/**
 * bench:compare's settle phase: ours, the reference and the chain's floor (bench/settle-floor.ts),
 * each with its own fresh payments, in rounds that take turns. anvil's cost per transaction grows
 * with the state the chain holds (every transfer leaves its authorization's nonce in the token's
 * storage: on this machine 600 transfers at a time ran at 1,372, 682, 480, 271 and 170 per
 * second, one run after another), so whoever runs later meets a slower chain; in turns, all three
 * meet the same one.
 */
import { createPublicClient, http } from "viem";
import type { DevAccount, Devnet } from "../src/evm/devnet/index.js";
import {
  cpuLine,
  latencyAndCpuRows,
  mergeSettleRuns,
  type SettleRun,
  type SettleSettings,
  settleRun,
  warmUpSettle,
} from "./compare-load.js";
import { fmt, type Row } from "./compare-report.js";
import { perRequest, type Server } from "./compare-servers.js";
import { percentile } from "./lib.js";
import { type FloorRun, mergeFloorRuns, settleFloor } from "./settle-floor.js";

export interface SettlePhase {
  readonly ours: SettleRun;
  readonly reference: SettleRun;
  readonly floor: FloorRun;
}

export interface SettlePlan extends SettleSettings {
  /** Payments per side, split over `rounds`. */
  readonly settles: number;
  readonly rounds: number;
  readonly signers: { readonly ours: DevAccount; readonly reference: DevAccount };
  readonly floorSender: DevAccount;
  /** Signed request bodies: one warm-up, then `settles` more, per server. */
  readonly bodies: { readonly ours: readonly string[]; readonly reference: readonly string[] };
}

/** `items` in `parts` runs of nearly equal length. */
function split<T>(items: readonly T[], parts: number): T[][] {
  const size = Math.ceil(items.length / parts);
  return Array.from({ length: parts }, (_, i) => items.slice(i * size, (i + 1) * size)).filter(
    (part) => part.length > 0,
  );
}

/** Mean time per settle in each stage, from serve's facilitator_settle_stage_seconds. */
async function settleStages(url: string): Promise<string | undefined> {
  const text = await fetch(`${url}/metrics`)
    .then((r) => r.text())
    .catch(() => "");
  const totals = new Map<string, { sum: number; count: number }>();
  for (const line of text.split("\n")) {
    const match = /^facilitator_settle_stage_seconds_(sum|count)\{.*stage="(\w+)".*\} (\S+)$/.exec(
      line,
    );
    if (!match) continue;
    const [, kind, stage, value] = match as unknown as [string, "sum" | "count", string, string];
    const total = totals.get(stage) ?? { sum: 0, count: 0 };
    total[kind] += Number(value);
    totals.set(stage, total);
  }
  if (totals.size === 0) return undefined;
  return [...totals]
    .map(([stage, { sum, count }]) => `${stage} ${fmt((sum / Math.max(count, 1)) * 1000, 1)}`)
    .join(", ");
}

export async function settlePhase(
  chain: Devnet,
  servers: readonly [Server, Server],
  plan: SettlePlan,
  rows: Row[],
  keep: (what: string, errors: readonly string[]) => void,
): Promise<SettlePhase> {
  const [ours, reference] = servers;
  for (const [server, bodies] of [
    [ours, plan.bodies.ours],
    [reference, plan.bodies.reference],
  ] as const) {
    const problem = await warmUpSettle(server, bodies[0] as string, plan.timeoutMs);
    if (problem) keep(`${server.name} settle warm-up`, [problem]);
  }
  const oursChunks = split(plan.bodies.ours.slice(1), plan.rounds);
  const referenceChunks = split(plan.bodies.reference.slice(1), plan.rounds);
  const runs = { ours: [] as SettleRun[], reference: [] as SettleRun[], floor: [] as FloorRun[] };
  // Blocks each side's transactions took: anvil's cost is mostly per block, so transactions that
  // reach it together cost it less each.
  const blocks = [0n, 0n, 0n];
  const chainRpc = createPublicClient({ transport: http(chain.rpcUrl, { retryCount: 0 }) });
  for (let round = 0; round < oursChunks.length; round++) {
    const turns = [
      async () => {
        const chunk = oursChunks[round] ?? [];
        runs.ours.push(await settleRun(chain, ours, plan.signers.ours.address, chunk, plan));
      },
      async () => {
        const chunk = referenceChunks[round] ?? [];
        const address = plan.signers.reference.address;
        runs.reference.push(await settleRun(chain, reference, address, chunk, plan));
      },
      async () => {
        const count = oursChunks[round]?.length ?? 0;
        runs.floor.push(
          await settleFloor(chain, plan.floorSender, count, plan.concurrency, plan.amount),
        );
      },
    ];
    // Who goes first changes every round.
    for (let i = 0; i < turns.length; i++) {
      const turn = (round + i) % turns.length;
      const before = await chainRpc.getBlockNumber({ cacheTime: 0 });
      await turns[turn]?.();
      blocks[turn] =
        (blocks[turn] ?? 0n) + (await chainRpc.getBlockNumber({ cacheTime: 0 })) - before;
    }
  }
  const so = mergeSettleRuns(runs.ours);
  const sr = mergeSettleRuns(runs.reference);
  const floor = mergeFloorRuns(runs.floor);
  for (const [name, run, inBlocks] of [
    ["ours", so, blocks[0]],
    ["reference", sr, blocks[1]],
  ] as const) {
    keep(`${name} settle`, run.errors);
    console.log(
      `settle c=${plan.concurrency} ${name.padEnd(9)} ${run.count} settled in ` +
        `${run.seconds.toFixed(2)} s over ${runs.ours.length} rounds in ${inBlocks} blocks, ${run.errors.length} errors, ` +
        `slowest ${fmt(Math.max(0, ...run.latenciesMs), 0)} ms; ${cpuLine(run)}`,
    );
  }
  const stages = await settleStages(ours.url);
  if (stages)
    console.log(
      `settle c=${plan.concurrency} ours, mean ms per settle by stage (serve's /metrics): ${stages}`,
    );
  keep("floor", floor.errors);
  console.log(
    `settle floor (no facilitator): ${floor.count} transfers in ${floor.seconds.toFixed(2)} s in ` +
      `${blocks[2]} blocks, ${floor.errors.length} errors, p50 ${fmt(percentile(floor.latenciesMs, 50), 1)} ms; CPU ms per transfer: anvil ` +
      `${fmt(perRequest(floor.anvilMs, floor.count), 2)}, sender ${fmt(perRequest(floor.clientMs, floor.count), 2)}`,
  );
  const c = plan.concurrency;
  rows.push(
    {
      label: `settle c=${c} settles/s (1 key)`,
      ours: so.count / so.seconds,
      reference: sr.count / sr.seconds,
      digits: 1,
      errors: [so.errors.length, sr.errors.length],
    },
    {
      label: `settle c=${c} ours vs floor (ref col: floor)`,
      ours: so.count / so.seconds,
      reference: floor.count / floor.seconds,
      digits: 1,
    },
    ...latencyAndCpuRows(`settle c=${c}`, "settle", so, sr, 1),
  );
  return { ours: so, reference: sr, floor };
}
