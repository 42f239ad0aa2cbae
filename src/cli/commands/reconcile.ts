/**
 * `facilitator reconcile`: one reconciler pass over the journal or the store (what `serve` does
 * every few seconds), as one JSON document. With the journal file it takes its turn with the keys
 * first, as settle does: it may send a dropped transaction again.
 */
import type { Reconciled } from "../../core/reconciler.js";
import { type ConfigFlags, loadConfig } from "../config.js";
import { UsageError } from "../errors.js";
import { facilitatorFrom } from "../facilitator.js";
import { printJson, warn } from "../output.js";
import { takeSettleTurn } from "../settle-turn.js";

export interface ReconcileFlags extends ConfigFlags {
  readonly idle?: string | undefined;
}

function idleMs(value: string | undefined): number {
  if (value === undefined) return 0;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0) {
    throw new UsageError("--idle must be a number of seconds");
  }
  return Math.round(seconds * 1000);
}

export async function runReconcile(flags: ReconcileFlags): Promise<number> {
  const idle = idleMs(flags.idle);
  const config = loadConfig(flags);
  const turn = await takeSettleTurn(config, warn);
  if (turn.kind === "interrupted") return 130;
  if (turn.kind === "timeout") {
    await printJson({ ok: false, error: "settlement_failed", message: turn.failure.message });
    return 3;
  }
  try {
    const facilitator = await facilitatorFrom(turn.config, true);
    let found: Reconciled[];
    try {
      found = await facilitator.reconcile({ idleMs: idle });
    } finally {
      await facilitator.answers.flush();
      if (facilitator.journal.shared) await facilitator.journal.close();
    }
    const counts: Record<string, number> = {};
    for (const item of found) counts[item.outcome] = (counts[item.outcome] ?? 0) + 1;
    const open = (counts.open ?? 0) + (counts.busy ?? 0);
    const errors = counts.error ?? 0;
    await printJson({
      ok: open + errors === 0,
      followed: found.length,
      counts,
      settlements: found,
    });
    return errors > 0 ? 3 : open > 0 ? 1 : 0;
  } finally {
    turn.locks?.release();
  }
}
