/** The serving process of `facilitator serve` (see serve-supervisor.ts): serves until told to stop. */
import module from "node:module";
import { UsageError } from "../../io/errors.js";
import { serveHere } from "./serve.js";
import type { SupervisorMessage, WorkerMessage } from "./serve-supervisor.js";

// As bin/facilitator.js does for the CLI: a restarted worker starts from cached code.
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
const tell = (message: WorkerMessage, then?: () => void) =>
  process.send?.(message, undefined, {}, () => then?.());
// The supervisor decides when to stop: a terminal's Ctrl-C reaches the whole process group.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});
// The supervisor holds serve's locks: without it, another process may take our keys and journal.
const orphaned = () => process.exit(1);
process.on("disconnect", orphaned);
const fail = (error: unknown) => {
  const { name, code } = (error ?? {}) as { name?: string; code?: string };
  tell({ type: "died", reason: `uncaught ${name ?? "error"}${code ? ` (${code})` : ""}` }, () =>
    process.exit(1),
  );
  setTimeout(() => process.exit(1), 1_000).unref();
};
process.on("uncaughtException", fail);

let stop: () => void = () => {};
const stopped = new Promise<void>((resolve) => {
  stop = resolve;
});
const start = new Promise<Extract<SupervisorMessage, { type: "start" }>>((resolve) => {
  process.on("message", (message: SupervisorMessage) => {
    if (message.type === "start") resolve(message);
    else if (message.type === "stop") stop();
  });
});
const { settings, bannerOnTty } = await start;
try {
  process.exitCode = await serveHere(settings, { bannerOnTty, stopped, tell });
  // Answered and closed: settles still following their transactions may keep this process busy.
  tell({ type: "stopped" });
} catch (error) {
  if (!(error instanceof UsageError)) fail(error);
  else {
    process.off("disconnect", orphaned);
    tell({ type: "usage", message: error.message, code: error.code }, () => process.exit(2));
  }
}
