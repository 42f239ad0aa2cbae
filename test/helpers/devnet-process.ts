/**
 * `facilitator devnet` as a user runs it (the built CLI, a subprocess), and commands run as a user
 * types them into a shell: `bash -c` with devnet.env files sourced first, `facilitator` being the
 * built CLI (`npx facilitator` in the banner's lines means the same).
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const BIN = path.join(ROOT, "bin", "facilitator.js");

export interface DevnetProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** This process's environment without any FACILITATOR_* variable, colour off. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("FACILITATOR_")),
  );
  return { ...env, FORCE_COLOR: "0" };
}

/** Any long-running command of the CLI (devnet, serve), its output collected. */
export function spawnCommand(args: string[], env: NodeJS.ProcessEnv = cleanEnv()): DevnetProcess {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

export function spawnDevnet(args: string[]): DevnetProcess {
  return spawnCommand(["devnet", ...args]);
}

/** Waits until the process's stdout (or stderr) holds `marker`; fails if it exits first. */
export async function waitFor(
  process: DevnetProcess,
  marker: string,
  options: { stream?: "stdout" | "stderr"; ms?: number } = {},
): Promise<string> {
  const read = options.stream === "stderr" ? process.stderr : process.stdout;
  const deadline = Date.now() + (options.ms ?? 30_000);
  while (!read().includes(marker)) {
    if (process.child.exitCode !== null) {
      throw new Error(`exited (${process.child.exitCode}) early; stderr: ${process.stderr()}`);
    }
    if (Date.now() > deadline) throw new Error(`no "${marker}"; stderr: ${process.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return read();
}

/** SIGINT, as Ctrl-C; SIGKILL if it has not stopped within 10 s. */
export async function stop(process: DevnetProcess | undefined): Promise<void> {
  if (!process || process.child.exitCode !== null || process.child.signalCode !== null) return;
  process.child.kill("SIGINT");
  await Promise.race([process.exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  if (process.child.exitCode === null && process.child.signalCode === null) {
    process.child.kill("SIGKILL");
  }
}

/** The value after `label` on the banner line that starts with it. */
export function bannerValue(banner: string, label: string): string {
  const line = banner.split("\n").find((l) => l.trimStart().startsWith(label));
  if (!line) throw new Error(`no "${label}" line in:\n${banner}`);
  return line.trimStart().slice(label.length).trim().split(/\s+/)[0] ?? "";
}

export interface ShellRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * `script` in bash, as typed at a prompt: each of `sources` sourced first, `facilitator` (and
 * `npx facilitator`) the built CLI, and PIPESTATUS on the last line of stderr when asked for.
 */
export function shell(
  sources: readonly string[],
  script: string,
  options: { pipestatus?: boolean; timeoutMs?: number } = {},
): Promise<ShellRun> {
  const lines = [
    `facilitator() { ${quote(process.execPath)} ${quote(BIN)} "$@"; }`,
    `npx() { if [ "$1" = facilitator ]; then shift; facilitator "$@"; else command npx "$@"; fi; }`,
    ...sources.map((file) => `source ${quote(file)}`),
    script,
    ...(options.pipestatus ? [`echo "PIPESTATUS \${PIPESTATUS[*]}" >&2`] : []),
  ];
  return new Promise((resolve) => {
    execFile(
      "bash",
      ["-c", lines.join("\n")],
      { cwd: ROOT, env: cleanEnv(), timeout: options.timeoutMs ?? 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The environment a shell has after `source envFile`. */
export async function sourcedEnv(envFile: string): Promise<NodeJS.ProcessEnv> {
  const run = await shell([envFile], "env -0");
  const env: NodeJS.ProcessEnv = {};
  for (const entry of run.stdout.split("\0")) {
    const at = entry.indexOf("=");
    if (at > 0) env[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return env;
}
