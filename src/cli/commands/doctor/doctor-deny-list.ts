/** doctor's look at the deny list: how many addresses it holds and how old it is, or what is wrong. */

import { UsageError } from "../../io/errors.js";
import type { CliConfig } from "../../settings/config.js";
import { readDenyList } from "../../settings/deny-list-file.js";
import { type Finding, finding } from "./doctor-checks.js";

/** "3 h", "2 d": how long ago, in its largest whole unit. */
function ageOf(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const units: [number, string][] = [
    [86_400, "d"],
    [3_600, "h"],
    [60, "min"],
  ];
  for (const [size, unit] of units)
    if (seconds >= size) return `${Math.floor(seconds / size)} ${unit}`;
  return `${seconds} s`;
}

export function checkDenyList(config: CliConfig, now = Date.now()): Finding[] {
  const file = config.denyList;
  if (file === undefined) return [];
  try {
    const { list, modifiedMs } = readDenyList(file);
    const modified = new Date(modifiedMs).toISOString();
    const message = `${file}: ${list.size} address${list.size === 1 ? "" : "es"}, changed ${ageOf(now - modifiedMs)} ago (${modified}); their payments are refused (address_denied)`;
    if (list.size > 0) return [finding("deny", "ok", message)];
    const fix = "one EVM (0x…) or Solana address a line; serve re-reads the file when it changes";
    return [finding("deny", "warning", `${message}: it is empty`, fix)];
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return [finding("deny", "error", error.message)];
  }
}
