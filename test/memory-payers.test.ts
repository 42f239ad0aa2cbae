/**
 * Memory is bounded in bytes (issue 40, item 6).
 *
 * As an operator runs it: the built `facilitator serve` (a child process, the bundle in dist/),
 * on a journal holding 30,000 settlements of distinct payers, each with a payment-identifier
 * (copies of one real settlement on anvil, bench/serve-memory.ts): more than memory keeps of
 * each kind, so the journal's settlements, its identifiers and who settled with us are all at
 * their bounds. Then 200 live settles through HTTP: all succeed, and the process's VmRSS (from
 * /proc) stays under 160 MiB. Before the journal's byte budgets (journal-memory.ts) it was
 * 163-171 MiB here (20,000 settlements and 20,000 identifiers kept whatever their bytes, who
 * settled with us 16 MiB), 147-150 MiB after.
 *
 * Through the maps alone: 200,000 distinct payers each settling once through the maps a
 * settlement leaves behind (bench/memory.ts: the rate buckets, who settled with us per payer and
 * asset, the landings the wasted-gas budget counts, the payer throttle, a channel's highest
 * voucher) keep the heap flat from 150,000 on and under the serving thread's 96 MiB; none of
 * them is refused. A child process, so that its heap is its own.
 *
 * The two run side by side: each waits on its own child process.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";
import type { MemoryPoint } from "../bench/memory.js";
import { serveMemory } from "../bench/serve-memory.js";

const run = promisify(execFile);

describe.concurrent("memory per payer", () => {
  test("serve on 30,000 settlements of distinct payers, then 200 live settles: RSS under 160 MiB, none refused", async () => {
    const measured = await serveMemory(30_000, 200);
    console.log("serve's memory (MiB):", measured);
    expect(measured.live.settled).toBe(200);
    expect(measured.after.rssMiB).toBeLessThan(160);
  }, 300_000);

  test("200,000 payers through the maps: the heap stays flat and under 96 MiB, and none is refused", async () => {
    const { stdout } = await run(
      process.execPath,
      ["--expose-gc", "--import", "tsx", "bench/memory.ts", "150000", "200000"],
      { timeout: 420_000, maxBuffer: 1 << 20 },
    );
    const { baseline, points } = JSON.parse(stdout) as {
      baseline: { heapMiB: number; rssMiB: number };
      points: MemoryPoint[];
    };
    console.log("memory per payer:", { baseline, points });
    const [at150k, at200k] = points as [MemoryPoint, MemoryPoint];
    expect(at200k.refused).toBe(0);
    expect(at200k.heapMiB).toBeLessThan(96);
    // Flat: the last 50,000 payers cost no more than a few MiB of what was kept.
    expect(at200k.heapMiB - at150k.heapMiB).toBeLessThan(4);
  }, 480_000);
});
