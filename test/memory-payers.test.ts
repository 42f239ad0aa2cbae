/**
 * Memory is bounded in bytes (issue 40, item 6): 200,000 distinct payers each settling once
 * through the maps a settlement leaves behind (bench/memory.ts: the rate buckets, who settled
 * with us per payer and asset, the landings the wasted-gas budget counts, the payer throttle, a
 * channel's highest voucher) keep the heap flat from 150,000 on and under the serving thread's
 * 96 MiB; none of them is refused. Before the budgets, the count bounds alone held 146 MiB of
 * heap at 150,000 payers. A child process, so that its heap and RSS are its own (with tsx, which
 * adds its own baseline to the RSS: reported, not asserted).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";
import type { MemoryPoint } from "../bench/memory.js";

const run = promisify(execFile);

describe("memory per payer", () => {
  test("200,000 payers: the heap stays flat and under 96 MiB, and none is refused", async () => {
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
