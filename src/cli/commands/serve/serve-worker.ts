/** The serving thread of `facilitator serve` (see serve-supervisor.ts): serves until told to stop. */
import { parentPort, workerData } from "node:worker_threads";
import { UsageError } from "../../io/errors.js";
import { serveHere } from "./serve.js";
import type { ServeSettings } from "./serve-settings.js";
import type { WorkerMessage } from "./serve-supervisor.js";

const { settings, bannerOnTty } = workerData as { settings: ServeSettings; bannerOnTty: boolean };
const tell = (message: WorkerMessage) => parentPort?.postMessage(message);
const stopped = new Promise<void>((resolve) => {
  parentPort?.on("message", (message: { type?: string }) => {
    if (message.type === "stop") resolve();
  });
});
try {
  process.exitCode = await serveHere(settings, {
    bannerOnTty,
    stopped,
    onListening: (port, url) => tell({ type: "listening", port, url }),
    onDraining: (inFlight) => tell({ type: "draining", inFlight }),
    onNote: (entry, text) => tell({ type: "note", entry, text }),
  });
  // Answered and closed: settles still following their transactions may keep this thread busy.
  tell({ type: "stopped" });
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  tell({ type: "usage", message: error.message, code: error.code });
  process.exitCode = 2;
}
parentPort?.close();
