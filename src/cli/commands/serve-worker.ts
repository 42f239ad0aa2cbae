/** The serving thread of `facilitator serve` (see runServe): runs the server until told to stop. */
import { parentPort, workerData } from "node:worker_threads";
import { UsageError } from "../errors.js";
import { type ServeFlags, serveHere } from "./serve.js";

const { flags, bannerOnTty } = workerData as { flags: ServeFlags; bannerOnTty: boolean };
const stopped = new Promise<void>((resolve) => {
  parentPort?.on("message", (message: { type?: string }) => {
    if (message.type === "stop") resolve();
  });
});
try {
  process.exitCode = await serveHere(flags, { bannerOnTty, stopped });
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  parentPort?.postMessage({ type: "usage", message: error.message });
  process.exitCode = 2;
}
parentPort?.close();
