/** `facilitator doctor`: runs the checks, prints the report (or one JSON document), exits by the worst. */

import chalk from "chalk";
import { RpcRegistry } from "../../../rpc/rpc.js";
import { registryOptions } from "../../facilitator/facilitator.js";
import { UsageError } from "../../io/errors.js";
import { terminalWidth, wrapLine } from "../../io/fit-lines.js";
import { printJson } from "../../io/output.js";
import { type ConfigFlags, loadConfig } from "../../settings/config.js";
import { resolveSetting } from "../../settings/setting-resolver.js";
import { SETTINGS } from "../../settings/settings.js";
import {
  checkJournal,
  checkProviderLimits,
  checkRpcs,
  EXIT_OF,
  type Finding,
  finding,
  type Level,
} from "./doctor-checks.js";
import { checkKeys, checkReceiverAuthorizer, checkSolanaFeePayers } from "./doctor-keys.js";
import { checkDenyList, checkLimits } from "./doctor-limits.js";
import { checkTokens } from "./doctor-tokens.js";

export interface DoctorFlags extends ConfigFlags {
  readonly json?: boolean | undefined;
}

const MARK: Readonly<Record<Level, string>> = {
  ok: chalk.green("✔"),
  warning: chalk.yellow("!"),
  error: chalk.red("✖"),
  unreachable: chalk.red("✖"),
};

async function findingsFor(flags: DoctorFlags): Promise<Finding[]> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(flags);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return [finding("config", "error", error.message)];
  }
  const file = resolveSetting(SETTINGS.config, { flags, env: process.env });
  const rpc = new RpcRegistry(registryOptions(config));
  const { findings: rpcFindings, chains } = await checkRpcs(rpc, config);
  const stored = async () => {
    if (config.storeUrl) {
      return (await import("./doctor-store.js")).checkStore(config, config.storeUrl);
    }
    const journal = await checkJournal(config, chains);
    const { checkJournalDisk } = await import("./doctor-disk.js");
    return [...journal, ...(await checkJournalDisk(config.journalPath))];
  };
  const said = file ? `config file ${file} is valid` : "no config file: flags and environment only";
  return [
    finding("config", "ok", said),
    ...rpcFindings,
    ...(await checkKeys(config, chains)),
    ...checkReceiverAuthorizer(config),
    ...(await checkSolanaFeePayers(rpc, config)),
    ...(await stored()),
    ...(await checkTokens(chains)),
    ...(await checkLimits(config, chains)),
    ...checkDenyList(config),
    // Last: what the providers refused while every check above asked them things.
    ...checkProviderLimits(rpc),
  ];
}

export async function runDoctor(flags: DoctorFlags): Promise<number> {
  const findings = await findingsFor(flags);
  const worst = Math.max(...findings.map((f) => EXIT_OF[f.level]));
  const verdict = ["all good", "warnings only", "configuration to fix", "an RPC cannot be reached"][
    worst
  ] as string;
  if (flags.json) {
    await printJson({ ok: worst === 0, exitCode: worst, verdict, findings });
    return worst;
  }
  // On a terminal each finding wraps at spaces below its text; in a pipe it stays one line.
  const width = terminalWidth();
  const lines = findings.flatMap((f) => [
    wrapLine(`${MARK[f.level]} ${f.area.padEnd(8)} ${f.message}`, width, 11),
    ...(f.fix ? [wrapLine(`  ${" ".repeat(8)} ${chalk.dim(`→ ${f.fix}`)}`, width, 13)] : []),
  ]);
  const colour = worst === 0 ? chalk.green : worst === 1 ? chalk.yellow : chalk.red;
  process.stdout.write(`${lines.join("\n")}\n${colour(verdict)}\n`);
  return worst;
}
