/** The server runs in a child with a bounded heap (OOM in a native addon aborts the whole process),
 * replaced on the same port when it dies. Exits: stopped 0, quick deaths 3, second Ctrl-C 130. */
import { type ChildProcess, fork } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";
import type { ErrorCode } from "../../../protocol/errors.js";
import { UsageError } from "../../io/errors.js";
import { logJson } from "../../io/output.js";
import type { ServeSettings } from "./serve-settings.js";

/** More deaths in a row than this, each of a worker that served under a minute: give up (exit 3). */
const MAX_DEATHS = 5;
const SHORT_LIFE_MS = 60_000;

export type WorkerMessage =
  | { readonly type: "listening"; readonly port: number; readonly url: string }
  | { readonly type: "draining"; readonly inFlight: Record<string, number> }
  /** Stopped: everything answered and the store closed; what still runs may be cut. */
  | { readonly type: "stopped" }
  | { readonly type: "usage"; readonly message: string; readonly code: ErrorCode }
  | { readonly type: "note"; readonly entry: Record<string, unknown>; readonly text: string }
  /** An uncaught error, named without its message (which could quote a request). */
  | { readonly type: "died"; readonly reason: string };

/** What this process tells the worker: its settings once, then perhaps to stop. */
export type SupervisorMessage =
  | { readonly type: "start"; readonly settings: ServeSettings; readonly bannerOnTty: boolean }
  | { readonly type: "stop" };

interface WorkerEnd {
  readonly exitCode: number;
  /** Why it died, without any message text (which could quote a request). */
  readonly reason?: string | undefined;
  readonly usage?: { readonly message: string; readonly code: ErrorCode } | undefined;
}

/** A small young generation: more gained nothing in the bench and cost RSS (12 MiB: 155, 16: 163). */
function heapFlags(maxHeapMb: number): string[] {
  const young = Math.max(1, Math.min(12, Math.floor(maxHeapMb / 4)));
  const inherited = process.execArgv.filter((flag) => !/^--max-(old|semi)-space-size/.test(flag));
  return [
    ...inherited,
    `--max-old-space-size=${maxHeapMb}`,
    `--max-semi-space-size=${Math.max(1, Math.floor(young / 3))}`,
  ];
}

/** V8's last words when a heap runs out: the start of a block of GC and native stack traces. */
const OUT_OF_MEMORY = /^<--- Last few GCs --->|^FATAL ERROR: .*heap out of memory/;

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
  let current: ChildProcess | undefined;
  let waitingFor: Record<string, number> = {};
  let stopNow: (() => void) | undefined;
  const stoppedNow = new Promise<void>((resolve) => {
    stopNow = resolve;
  });
  const human = process.stderr.isTTY === true;
  const note = (entry: Record<string, unknown>, text?: string) => {
    if (settings.quiet) return;
    if (human && text) process.stderr.write(`facilitator: ${text}\n`);
    else logJson(entry);
  };
  let timedOut = false;
  let stoppedClean = false;
  let port: number | undefined;
  let hardStop: NodeJS.Timeout | undefined;
  const stop = () => {
    if (stopping) {
      // The second Ctrl-C: stop now, cutting short what was still answering.
      stopNow?.();
      return;
    }
    stopping = true;
    tell(current, { type: "stop" });
    // The worker answers everything before this; should it not have ended by then, it is ended.
    hardStop = setTimeout(() => {
      timedOut = true;
      stopNow?.();
    }, settings.config.shutdownTimeoutMs);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const onMessage = (message: WorkerMessage) => {
    if (message.type === "draining") {
      waitingFor = message.inFlight;
      if (Object.keys(waitingFor).length === 0) return;
      const settles = waitingFor["/settle"] ?? 0;
      note(
        { event: "stopping", waitingFor },
        `stopping: waiting for ${describeInFlight(waitingFor)} to answer${settles > 0 ? " (a settle waits for its receipt)" : ""}; Ctrl-C again to stop now`,
      );
    } else if (message.type === "note") note(message.entry, message.text);
    else if (message.type === "listening") {
      port = message.port;
      hooks.onListening?.(message.url);
    } else if (message.type === "stopped") {
      // Settles that ran past their answer may keep the worker busy: it is ended now.
      stoppedClean = true;
      // A moment for its last log lines to cross from the worker.
      setTimeout(() => stopNow?.(), 200);
    }
  };

  let deathsInARow = 0;
  try {
    for (let start = 0; ; start++) {
      const startedAt = Date.now();
      const worker = fork(fileURLToPath(new URL("./serve-worker.js", import.meta.url)), [], {
        execArgv: heapFlags(settings.maxHeapMb),
        serialization: "advanced",
        stdio: ["ignore", "inherit", "pipe", "ipc"],
      });
      tell(worker, {
        type: "start",
        // A new worker: the port first bound (maybe asked 0), our store owner to take over holds.
        settings: {
          ...settings,
          ...(port === undefined ? {} : { port }),
          storeOwner: `${os.hostname()}:${process.pid}`,
        },
        bannerOnTty: start === 0 && process.stderr.isTTY === true,
      });
      current = worker;
      if (stopping) tell(worker, { type: "stop" });
      const ended = watch(worker, onMessage);
      const end = await Promise.race([ended, stoppedNow.then(() => undefined)]);
      current = undefined;
      if (end === undefined) {
        await killWorker(worker);
        if (stoppedClean) return 0;
        if (timedOut) {
          const { shutdownTimeoutMs } = settings.config;
          note({ event: "stopped_at_timeout", shutdownTimeoutMs });
          return 0;
        }
        const settles = waitingFor["/settle"] ?? 0;
        note(
          { event: "stopped_now", cutShort: waitingFor },
          `stopped now${settles > 0 ? `; ${settles} settle${settles === 1 ? " was" : "s were"} cut short: ${settles === 1 ? "it is" : "they are"} in the journal ${settings.config.journalPath}, and a retry of the same payment follows ${settles === 1 ? "it" : "them"}` : ""}`,
        );
        return 130;
      }

      if (stopping && end.reason === undefined) return end.exitCode;
      const started = port !== undefined;
      // A first start that cannot start (bad port, unusable journal) is the caller's to fix.
      if (!started && end.usage) throw new UsageError(end.usage.message, end.usage.code);
      if (started && stopping && end.exitCode === 0) return 0;
      if (!started || stopping) {
        // Said, as any other death is, but not restarted.
        const reason = end.reason ?? `exit ${end.exitCode}`;
        note({ event: "worker_died", reason, restart: false, ...(started ? { stopping } : {}) });
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

function tell(worker: ChildProcess | undefined, message: SupervisorMessage): void {
  if (worker?.connected) worker.send(message, () => {});
}

/** Kills the worker (a second stop, or one that answered everything) and waits for its exit. */
async function killWorker(worker: ChildProcess): Promise<void> {
  if (worker.exitCode !== null || worker.signalCode !== null) return;
  const exited = new Promise((resolve) => worker.once("exit", resolve));
  worker.kill("SIGKILL");
  await exited;
}

/** The worker's end and why; its stderr passes through, but a heap run out is said as the reason. */
function watch(
  worker: ChildProcess,
  onMessage: (message: WorkerMessage) => void,
): Promise<WorkerEnd> {
  let reason: string | undefined;
  let usage: WorkerEnd["usage"];
  let outOfMemory = false;
  let partial = "";
  worker.on("message", (message: WorkerMessage) => {
    if (message.type === "usage") usage = { message: message.message, code: message.code };
    else if (message.type === "died") reason = message.reason;
    else onMessage(message);
  });
  worker.on("error", (error: NodeJS.ErrnoException) => {
    reason ??= `cannot start: ${error.code ?? error.name}`;
  });
  const passOn = (text: string) => {
    if (outOfMemory) return;
    const lines = (partial + text).split("\n");
    partial = lines.pop() ?? "";
    const kept: string[] = [];
    for (const line of lines) {
      if (OUT_OF_MEMORY.test(line)) {
        outOfMemory = true;
        break;
      }
      kept.push(`${line}\n`);
    }
    if (kept.length > 0) process.stderr.write(kept.join(""));
  };
  worker.stderr?.setEncoding("utf8").on("data", passOn);
  const closed = new Promise<void>((resolve) => worker.stderr?.on("close", resolve) ?? resolve());
  return new Promise((resolve) => {
    worker.on("exit", async (code, signal) => {
      await Promise.race([closed, new Promise((r) => setTimeout(r, 500))]);
      if (partial && !outOfMemory) process.stderr.write(`${partial}\n`);
      if (outOfMemory) reason = "out of memory";
      else if (signal) reason ??= `killed by ${signal}`;
      resolve({ exitCode: code ?? 1, reason, usage });
    });
  });
}
