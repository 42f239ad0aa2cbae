/**
 * What bench:batch prints at the end: the gas-per-paid-request table, the paid-requests-per-second
 * table (both markdown), the RPC calls per request by method, our journal's growth per voucher,
 * the N=50 gas target, and how long the run took.
 */
import os from "node:os";
import path from "node:path";
import type { GasRound } from "./batch-gas-per-request.js";
import type { JournalGrowth, RateRow } from "./batch-requests-per-second.js";
import { EXACT_GAS_HINT, K, PERMIT2, RATE_CHANNELS } from "./batch-settings.js";
import { percentile } from "./lib.js";

/** A markdown table, columns after the first right-aligned. */
export function markdownTable(header: readonly string[], rows: readonly string[][]): string {
  const widths = header.map((h, i) =>
    Math.max(h.length, 3, ...rows.map((row) => row[i]?.length ?? 0)),
  );
  const line = (cells: readonly string[]) =>
    `| ${cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => (i === 0 ? "-".repeat(w) : `${"-".repeat(w - 1)}:`)).join(" | ")} |`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

const int = (value: bigint | number) => Math.round(Number(value)).toLocaleString("en-US");
const fixed = (value: number | undefined, digits: number) =>
  value === undefined || !Number.isFinite(value) ? "n/a" : value.toFixed(digits);

function gasTable(rounds: readonly GasRound[], exact: Map<string, bigint>): string {
  const reference = exact.get("ours") ?? EXACT_GAS_HINT;
  const rows = rounds.map((r) => {
    const deposits = r.deposits.reduce((a, b) => a + b, 0n);
    const requests = BigInt(r.k * r.n);
    const total = deposits + r.claim + r.settle;
    const share = (gas: bigint) => int(Number(gas) / Number(requests));
    return [
      `${r.n}`,
      `${r.facilitator}${r.method === "permit2" ? " (Permit2)" : ""}`,
      int(Number(deposits) / r.deposits.length),
      int(r.claim),
      int(r.settle),
      share(deposits),
      share(r.claim),
      share(r.settle),
      share(total),
      `${((100 * Number(total)) / Number(requests) / Number(reference)).toFixed(1)} %`,
    ];
  });
  for (const [name, gas] of exact) {
    rows.push([
      "exact",
      name,
      "",
      "",
      "",
      "",
      "",
      "",
      int(gas),
      `${((100 * Number(gas)) / Number(reference)).toFixed(1)} %`,
    ]);
  }
  return markdownTable(
    [
      "vouchers per channel (N)",
      "facilitator",
      "deposit gas, each",
      `claim gas (${K} channels)`,
      "settle gas",
      "deposit share",
      "claim share",
      "settle share",
      "gas per paid request",
      "of an exact transfer",
    ],
    rows,
  );
}

function rateTable(rows: readonly RateRow[]): string {
  return markdownTable(
    [
      "paid request",
      "facilitator",
      "concurrency",
      "requests",
      "per second",
      "p50 ms",
      "p99 ms",
      "server CPU ms/req",
      "RPC calls/req",
      "errors",
    ],
    rows.map(({ kind, facilitator, concurrency, level }) => [
      kind,
      facilitator,
      String(concurrency),
      String(level.count),
      fixed(level.latenciesMs.length / level.seconds, 0),
      fixed(percentile(level.latenciesMs, 50), 1),
      fixed(percentile(level.latenciesMs, 99), 1),
      fixed(level.cpuPerRequest, 2),
      fixed(level.rpcPerRequest, 2),
      String(level.errors.length + level.notSent),
    ]),
  );
}

/** Prints the report of a run that started at `started` (performance.now()). */
export function printReport(run: {
  readonly rounds: readonly GasRound[];
  readonly exact: Map<string, bigint>;
  readonly rates: readonly RateRow[];
  readonly journal: JournalGrowth;
  readonly journalFile: string;
  readonly started: number;
}): void {
  const { rounds, exact, rates, journal, journalFile, started } = run;
  console.log("");
  console.log(
    `### Gas per paid request (K = ${K} channels per round, EIP-3009 deposits${PERMIT2 ? " and Permit2" : ""})`,
  );
  console.log("");
  console.log(gasTable(rounds, exact));
  console.log("");
  console.log(
    `### Paid requests per second through HTTP (${os.cpus().length} cores shared by anvil, both servers and the load generator)`,
  );
  console.log("");
  console.log(rateTable(rates));
  console.log("");
  for (const row of rates) {
    const methods = Object.entries(row.level.rpcMethods)
      .sort(([, a], [, b]) => b - a)
      .map(([m, c]) => `${m} ${(c / Math.max(1, row.level.count)).toFixed(2)}`)
      .join(", ");
    console.log(
      `RPC per request, ${row.kind} ${row.facilitator} c=${row.concurrency}: ${methods || "none"}`,
    );
  }
  if (journal.vouchers > 0) {
    console.log(
      `ours' journal (${path.basename(journalFile)}) grew ${int(journal.bytes)} bytes over ` +
        `${int(journal.vouchers)} accepted vouchers: ${fixed(journal.bytes / journal.vouchers, 0)} bytes per voucher`,
    );
  }
  const fifty = rounds.find((r) => r.facilitator === "ours" && r.n === 50);
  if (fifty) {
    const perRequest =
      Number(fifty.deposits.reduce((a, b) => a + b, 0n) + fifty.claim + fifty.settle) /
      (fifty.k * fifty.n);
    const tenth = Number(exact.get("ours") ?? EXACT_GAS_HINT) / 10;
    console.log(
      `target: ours at N=50 under a tenth of an exact transfer: ${int(perRequest)} vs ${int(tenth)} gas: ${perRequest < tenth ? "met" : "UNMET"}`,
    );
  }
  console.log(
    `exact paid request = POST /verify then POST /settle (waitUntil confirmed); voucher paid ` +
      `request = POST /verify of a fresh voucher over ${RATE_CHANNELS} channels. Took ` +
      `${((performance.now() - started) / 1000).toFixed(0)} s.`,
  );
}
