/**
 * What a bench:batch run keeps as it goes: the failures (any one makes it exit 1) and its
 * progress lines.
 */
import type { Outcome } from "./batch-x402-http.js";

/** Every failure so far, as "where: what". */
export const failures: string[] = [];

export function fail(where: string, what: string): void {
  failures.push(`${where}: ${what}`);
}

/** Records every outcome that did not succeed as a failure at `where`. */
export function check(where: string, outcomes: readonly Outcome[]): void {
  for (const outcome of outcomes) if (!outcome.ok) fail(where, outcome.error ?? "failed");
}

export const log = (line: string) => console.log(`bench: ${line}`);
