/** The built CLI (`node bin/facilitator.js`, from dist/) as a subprocess, for end-to-end checks. */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = path.join(ROOT, "bin", "facilitator.js");
/**
 * Settles from these runs keep their journal here, never in the user's state directory: one per
 * test file (in its state directory, file-setup.ts), as a worker runs file after file.
 */
let journalDir: string | undefined;

/** Removes the runs' journals: call it in afterAll. */
export function removeCliJournals(): void {
  if (journalDir) rmSync(journalDir, { recursive: true, force: true });
  journalDir = undefined;
}

function journalDirOfThisFile(): string {
  const home = process.env.XDG_STATE_HOME ?? os.tmpdir();
  if (journalDir === undefined || path.dirname(journalDir) !== home) {
    journalDir = mkdtempSync(path.join(home, "facilitator-run-cli-"));
  }
  return journalDir;
}

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the CLI with none of this process's FACILITATOR_* variables, only those given. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("FACILITATOR_")),
  );
  const journal = path.join(journalDirOfThisFile(), "journal.jsonl");
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      {
        cwd: ROOT,
        env: { ...clean, FACILITATOR_JOURNAL: journal, ...env, FORCE_COLOR: "0" },
        timeout: 20_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
