/** `facilitator reconcile`: one reconciler pass (journal file: after its turn with the keys). */
import chalk from "chalk";
import type { Reconciled } from "../../../core/reconciler.js";
import { facilitatorFrom, finish } from "../../facilitator/facilitator.js";
import { UsageError } from "../../io/errors.js";
import { type HumanOutput, humanOutput, note, printJson, warn } from "../../io/output.js";
import { takeSettleTurn } from "../../locks/settle-turn.js";
import { type ConfigFlags, loadConfig } from "../../settings/config.js";

export interface ReconcileFlags extends ConfigFlags {
  readonly idle?: string | undefined;
  readonly quiet?: boolean | undefined;
}

/** Every outcome a pass can give, in the order docs/cli.md lists them: all counted, zeros too. */
const OUTCOMES = ["landed", "failed", "dropped", "open", "busy", "error"] as const;
type Counts = Record<Reconciled["outcome"], number>;

function idleMs(value: string | undefined): number {
  if (value === undefined) return 0;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new UsageError("--idle must be a number of seconds");
  }
  return Math.round(seconds * 1000);
}

/** The one line for people on stderr: "✔ nothing left open: followed 2 (1 landed, 1 failed)". */
function summarizeReconcile(out: HumanOutput, followed: number, counts: Counts): void {
  const parts = OUTCOMES.filter((o) => counts[o] > 0).map((o) => `${counts[o]} ${o}`);
  const what =
    followed === 0 ? "no settlement to follow" : `followed ${followed} (${parts.join(", ")})`;
  const open = counts.open + counts.busy;
  const label =
    counts.error > 0
      ? chalk.red(`✖ ${counts.error} could not be followed`)
      : open > 0
        ? chalk.yellow(`… ${open} still open`)
        : chalk.green("✔ nothing left open");
  note(out, `${label}: ${what}`);
}

export async function runReconcile(flags: ReconcileFlags): Promise<number> {
  const out = humanOutput(flags.quiet);
  const idle = idleMs(flags.idle);
  const config = loadConfig(flags);
  const turn = await takeSettleTurn(config, flags.quiet ? undefined : warn, true);
  if (turn.kind === "interrupted") return 130;
  if (turn.kind === "timeout") {
    const { code, message } = turn.failure;
    await printJson({ ok: false, error: code, message });
    note(out, `${chalk.red("✖ failed")} ${chalk.bold(code)}: ${message}`);
    return 3;
  }
  try {
    const facilitator = await facilitatorFrom(turn.config, true);
    const found = await facilitator.reconcile({ idleMs: idle }).finally(() => finish(facilitator));
    const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Counts;
    for (const item of found) counts[item.outcome] += 1;
    const open = counts.open + counts.busy;
    await printJson({
      ok: open + counts.error === 0,
      followed: found.length,
      counts,
      settlements: found,
    });
    summarizeReconcile(out, found.length, counts);
    return counts.error > 0 ? 3 : open > 0 ? 1 : 0;
  } finally {
    turn.locks?.release();
  }
}
