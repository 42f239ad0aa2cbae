/** stdout carries exactly one JSON document; stderr is for people (a terminal, no --quiet). */
import chalk from "chalk";
import { statusOf } from "../../protocol/errors.js";
import type { Reply } from "../../protocol/respond.js";

/** `quiet` (--quiet): nothing at all on stderr, not even a failure's line. */
export function humanOutput(quiet: boolean | undefined) {
  return { enabled: !quiet && process.stderr.isTTY === true, quiet };
}
export type HumanOutput = ReturnType<typeof humanOutput>;

export function printJson(body: unknown): Promise<void> {
  return new Promise((resolve) => {
    process.stdout.write(`${JSON.stringify(body, null, 2)}\n`, () => resolve());
  });
}

/** A line for people on stderr, unless --quiet: said even when stderr is no terminal. */
export function warn(line: string): void {
  process.stderr.write(`facilitator: ${line}\n`);
}

/** One JSON log line on stderr, stamped with the time. */
export function logJson(entry: Record<string, unknown>): void {
  process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), ...entry })}\n`);
}

/** ora's spinner on stderr; `discardStdin: false`, or Ctrl-C could leave the terminal raw. */
export async function startSpinner(text: string) {
  // A terminal that reports no width (a pty nobody sized) would make ora erase lines forever.
  if (!process.stderr.columns) return undefined;
  const { default: ora } = await import("ora");
  return ora({ text, stream: process.stderr, discardStdin: false }).start();
}

export function note(out: HumanOutput, line: string): void {
  if (out.enabled) process.stderr.write(`${line}\n`);
}

export function summarize(
  out: HumanOutput,
  op: "verify" | "settle",
  reply: Reply,
  /** How far the settle waited: a submitted one is not settled yet, and says so. */
  waitUntil?: string | undefined,
): void {
  const body = reply.body;
  const f = reply.failure;
  const hash = (body.transactionHash ?? body.transaction) as string | undefined;
  if (!out.enabled) {
    // No terminal (CI, a script): a failure still gets one plain line, so the log says why.
    if (f && !out.quiet) {
      warn(`${op}: ${f.code}: ${f.message}${hash ? ` (transaction ${hash})` : ""}`);
    }
    return;
  }
  if (!f) {
    const payer = (body.payer as string | undefined) ?? "";
    note(
      out,
      op === "verify"
        ? `${chalk.green("✔ valid")} payment from ${chalk.bold(payer)}`
        : waitUntil === "submitted"
          ? `${chalk.green("✔ submitted")} ${chalk.bold(hash ?? "")} ${chalk.dim("(not mined yet; facilitator status follows it)")}`
          : `${chalk.green("✔ settled")} ${chalk.bold(hash ?? "")}`,
    );
    return;
  }
  const label =
    f.code === "interrupted"
      ? chalk.yellow("■ interrupted")
      : f.code === "settlement_pending"
        ? chalk.yellow("… pending")
        : statusOf(f) < 500
          ? chalk.red("✖ rejected")
          : chalk.red("✖ failed");
  note(out, `${label} ${chalk.bold(f.code)}: ${f.message}`);
  if (hash) note(out, `  transaction ${chalk.bold(hash)}`);
}
