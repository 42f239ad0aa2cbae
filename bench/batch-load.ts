/**
 * The load loop bench:batch's rate levels run, and what it measures: workers each doing their
 * queue of paid requests until done or out of time, latencies, errors, and the server's CPU time
 * and RPC calls per request over the level.
 */
import type { Target } from "./batch-server-processes.js";
import type { Outcome } from "./batch-x402-http.js";
import { cpuMs } from "./lib.js";

export interface Level {
  readonly count: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly errors: string[];
  readonly notSent: number;
  /** The server's CPU ms and RPC calls per answered request. */
  readonly cpuPerRequest?: number | undefined;
  readonly rpcPerRequest: number;
  readonly rpcMethods: Record<string, number>;
}

/**
 * Runs `queues.length` workers at once, worker w doing queues[w] in order, until all are done or
 * `seconds` pass; each job is one paid request (it may be several HTTP calls) and says whether it
 * succeeded. Measures the target's CPU and RPC calls over the run.
 */
export async function runLevel(
  target: Target,
  queues: readonly (readonly (() => Promise<Outcome>)[])[],
  seconds: number,
): Promise<Level> {
  const latenciesMs: number[] = [];
  const errors: string[] = [];
  let notSent = 0;
  const cpuBefore = cpuMs(target.pid);
  const rpcBefore = target.rpc.counts();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    queues.map(async (queue) => {
      for (const [i, job] of queue.entries()) {
        if (performance.now() >= deadline) {
          notSent += queue.length - i;
          return;
        }
        const outcome = await job();
        if (outcome.ok) latenciesMs.push(outcome.ms);
        else errors.push(outcome.error ?? "failed");
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const cpuAfter = cpuMs(target.pid);
  const rpcAfter = target.rpc.counts();
  const rpcMethods: Record<string, number> = {};
  let rpcCalls = 0;
  for (const [method, n] of Object.entries(rpcAfter)) {
    const delta = n - (rpcBefore[method] ?? 0);
    if (delta > 0) rpcMethods[method] = delta;
    rpcCalls += delta;
  }
  const count = latenciesMs.length + errors.length;
  return {
    count,
    seconds: elapsed,
    latenciesMs,
    errors,
    notSent,
    cpuPerRequest:
      cpuBefore === undefined || cpuAfter === undefined || count === 0
        ? undefined
        : (cpuAfter - cpuBefore) / count,
    rpcPerRequest: count === 0 ? 0 : rpcCalls / count,
    rpcMethods,
  };
}

/** Runs `jobs` `concurrency` at a time (no timing); the outcomes in order. */
export async function inParallel<T>(
  items: readonly T[],
  concurrency: number,
  job: (item: T, index: number) => Promise<Outcome>,
): Promise<Outcome[]> {
  const outcomes: Outcome[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const index = next;
        next += 1;
        outcomes[index] = await job(items[index] as T, index);
      }
    }),
  );
  return outcomes;
}

/** Splits jobs over `concurrency` workers, round-robin. */
export function deal<T>(items: readonly T[], concurrency: number): T[][] {
  const queues: T[][] = Array.from({ length: concurrency }, () => []);
  items.forEach((item, i) => {
    queues[i % concurrency]?.push(item);
  });
  return queues;
}
