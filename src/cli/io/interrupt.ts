/** Ctrl-C and SIGTERM while a command works: it answers at once, saying what was left behind. */

/** `signal` resolves with the signal once one arrives; never rejects. */
export function onInterrupt() {
  let dispose: () => void = () => undefined;
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    const onSignal = (name: NodeJS.Signals) => resolve(name);
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
    dispose = () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    };
  });
  return { signal, dispose };
}

/** The exit status a shell reports for a process stopped by `signal`: 128 + its number. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return signal === "SIGTERM" ? 143 : 130;
}
