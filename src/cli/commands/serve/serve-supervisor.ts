/**
 * The main thread of `facilitator serve`. The server runs in a worker thread with a bounded heap
 * (peak RSS under load about 120 MiB instead of 150-180 MiB, same throughput). If that worker dies
 * (its heap ran out, an uncaught error), one JSON line says so on stderr and a new worker serves
 * on the same host and port; settles that were in flight are in the journal, which the new worker
 * reopens, and are reconciled when retried. Several deaths in a short time mean something is
 * wrong that a restart will not fix: then the process exits 3. SIGINT/SIGTERM stop the worker
 * cleanly (requests in flight answer first; what it waits for is said) and the process exits 0,
 * without a restart. A second Ctrl-C stops at once (exit 130): a settle cut short is in the
 * journal, and a retry of the same payment follows it.
 */
import { Worker } from "node:worker_threads";
import type { ErrorCode } from "../../../protocol/errors.js";
import { UsageError } from "../../io/errors.js";
import type { ServeSettings } from "./serve-settings.js";

/**
 * More deaths in a row than this, each of a worker that had served less than a minute: give up
 * (exit 3). Counted per worker, not in a clock window, so a crash loop is told apart from a worker
 * that served a while on a slow machine too; a worker that lived a minute starts the count afresh.
 */
const MAX_DEATHS = 5;
const SHORT_LIFE_MS = 60_000;

/** What the serving thread reports to this one. */
export type WorkerMessage =
  | { readonly type: "listening"; readonly port: number; readonly url: string }
  | { readonly type: "draining"; readonly inFlight: Record<string, number> }
  /** Stopped: everything answered and the store closed; what still runs may be cut. */
  | { readonly type: "stopped" }
  | { readonly type: "usage"; readonly message: string; readonly code: ErrorCode }
  | { readonly type: "note"; readonly entry: Record<string, unknown>; readonly text: string };

interface WorkerEnd {
  readonly exitCode: number;
  /** Why it died, without any message text (which could quote a request). */
  readonly reason?: string | undefined;
  readonly usage?: { readonly message: string; readonly code: ErrorCode } | undefined;
}

/**
 * The young generation stays small: the bench showed no gain from more, and at 12 MiB (was 16)
 * serve's peak RSS on a 200,000-settlement history is 153-155 MiB (was 158-163).
 */
function heapLimits(maxHeapMb: number) {
  return {
    maxOldGenerationSizeMb: maxHeapMb,
    maxYoungGenerationSizeMb: Math.max(1, Math.min(12, Math.floor(maxHeapMb / 4))),
  };
}

function reasonOf(error: Error & { code?: string }): string {
  if (error.code === "ERR_WORKER_OUT_OF_MEMORY") return "out of memory";
  return `uncaught ${error.name}${error.code ? ` (${error.code})` : ""}`;
}

/** "2 requests (1 settle, 1 verify)" */
function describeInFlight(inFlight: Record<string, number>): string {
  const total = Object.values(inFlight).reduce((a, b) => a + b, 0);
  const parts = Object.entries(inFlight).map(([path, n]) => `${n} ${path.replace(/^\//, "")}`);
  return `${total} request${total === 1 ? "" : "s"} (${parts.join(", ")})`;
}

export async function superviseServer(
  settings: ServeSettings,
  hooks: { onListening?: (url: string) => void } = {},
): Promise<number> {
  let stopping = false;
  let current: Worker | undefined;
  let waitingFor: Record<string, number> = {};
  let stopNow: (() => void) | undefined;
  const stoppedNow = new Promise<void>((resolve) => {
    stopNow = resolve;
  });
  const human = process.stderr.isTTY === true;
  const note = (entry: Record<string, unknown>, text?: string) => {
    if (settings.quiet) return;
    if (human && text) process.stderr.write(`facilitator: ${text}\n`);
    else process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...entry })}\n`);
  };
  let timedOut = false;
  let stoppedClean = false;
  let hardStop: NodeJS.Timeout | undefined;
  const stop = () => {
    if (stopping) {
      // The second Ctrl-C: stop now, cutting short what was still answering.
      stopNow?.();
      return;
    }
    stopping = true;
    current?.postMessage({ type: "stop" });
    // The worker answers everything before this; should it not have ended by then, it is ended.
    hardStop = setTimeout(() => {
      timedOut = true;
      stopNow?.();
    }, settings.config.shutdownTimeoutMs);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const onDraining = (inFlight: Record<string, number>) => {
    waitingFor = inFlight;
    if (Object.keys(inFlight).length === 0) return;
    const settles = inFlight["/settle"] ?? 0;
    note(
      { event: "stopping", waitingFor: inFlight },
      `stopping: waiting for ${describeInFlight(inFlight)} to answer${settles > 0 ? " (a settle waits for its receipt)" : ""}; Ctrl-C again to stop now`,
    );
  };

  let port: number | undefined;
  let deathsInARow = 0;
  try {
    for (let start = 0; ; start++) {
      const startedAt = Date.now();
      const worker = new Worker(new URL("./serve-worker.js", import.meta.url), {
        workerData: {
          // After the first start, the port the first worker bound (it may have asked for 0).
          settings: port === undefined ? settings : { ...settings, port },
          bannerOnTty: start === 0 && process.stderr.isTTY === true,
        },
        resourceLimits: heapLimits(settings.maxHeapMb),
      });
      current = worker;
      if (stopping) worker.postMessage({ type: "stop" });
      const ended = watch(worker, {
        onDraining,
        onStopped: () => {
          // Settles that ran past their answer may keep the thread busy: it is ended now.
          stoppedClean = true;
          // A moment for its last log lines to cross from the thread.
          setTimeout(() => stopNow?.(), 200);
        },
        onListening: (bound, url) => {
          port = bound;
          hooks.onListening?.(url);
        },
        onNote: note,
      });
      const end = await Promise.race([ended, stoppedNow.then(() => undefined)]);
      current = undefined;
      if (end === undefined && (timedOut || stoppedClean)) {
        await worker.terminate();
        if (timedOut && !stoppedClean) {
          note({
            event: "stopped_at_timeout",
            shutdownTimeoutMs: settings.config.shutdownTimeoutMs,
          });
        }
        return 0;
      }
      if (end === undefined) {
        await worker.terminate();
        const settles = waitingFor["/settle"] ?? 0;
        note(
          { event: "stopped_now", cutShort: waitingFor },
          `stopped now${settles > 0 ? `; ${settles} settle${settles === 1 ? " was" : "s were"} cut short: ${settles === 1 ? "it is" : "they are"} in the journal ${settings.config.journalPath}, and a retry of the same payment follows ${settles === 1 ? "it" : "them"}` : ""}`,
        );
        return 130;
      }

      if (stopping && end.reason === undefined) return end.exitCode;
      // A first start that cannot start (bad port, unusable journal) is the caller's to fix.
      if (port === undefined) {
        if (end.usage !== undefined) throw new UsageError(end.usage.message, end.usage.code);
        note({
          event: "worker_died",
          reason: end.reason ?? `exit ${end.exitCode}`,
          restart: false,
        });
        return 3;
      }
      if (stopping) {
        if (end.exitCode === 0) return 0;
        // It died while stopping: said, as any other death is, but not restarted.
        note({
          event: "worker_died",
          reason: end.reason ?? `exit ${end.exitCode}`,
          restart: false,
          stopping: true,
        });
        return 3;
      }

      deathsInARow = Date.now() - startedAt < SHORT_LIFE_MS ? deathsInARow + 1 : 1;
      const restart = deathsInARow <= MAX_DEATHS;
      note({
        event: "worker_died",
        reason: end.reason ?? end.usage?.message ?? `exit ${end.exitCode}`,
        restart,
        deathsInARow,
      });
      if (!restart) return 3;
      // A short pause that grows with repeated deaths, so a crash loop does not spin.
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** (deathsInARow - 1)));
      if (stopping) return 0;
    }
  } finally {
    clearTimeout(hardStop);
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}

/** Resolves when the worker has exited, with why. */
function watch(
  worker: Worker,
  hooks: {
    onDraining: (inFlight: Record<string, number>) => void;
    onStopped: () => void;
    onListening: (port: number, url: string) => void;
    onNote: (entry: Record<string, unknown>, text: string) => void;
  },
): Promise<WorkerEnd> {
  let reason: string | undefined;
  let usage: WorkerEnd["usage"];
  worker.on("message", (message: WorkerMessage) => {
    if (message.type === "listening") hooks.onListening(message.port, message.url);
    else if (message.type === "draining") hooks.onDraining(message.inFlight);
    else if (message.type === "stopped") hooks.onStopped();
    else if (message.type === "note") hooks.onNote(message.entry, message.text);
    else if (message.type === "usage") usage = { message: message.message, code: message.code };
  });
  worker.on("error", (error) => {
    reason = reasonOf(error);
  });
  return new Promise((resolve) => {
    worker.on("exit", (exitCode) => resolve({ exitCode, reason, usage }));
  });
}
