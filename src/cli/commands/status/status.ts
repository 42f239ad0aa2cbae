/** `facilitator status`: one settlement, as the journal or store and the chain know it. */
import chalk from "chalk";
import { checkStatusQuery, type SettlementStatus, type StatusQuery } from "../../../core/status.js";
import { FacilitatorError } from "../../../protocol/errors.js";
import { facilitatorFrom, finish } from "../../facilitator/facilitator.js";
import { UsageError } from "../../io/errors.js";
import { readRequest } from "../../io/input.js";
import { type HumanOutput, humanOutput, note, printJson } from "../../io/output.js";
import { type ConfigFlags, loadConfig } from "../../settings/config.js";

export interface StatusFlags extends ConfigFlags {
  readonly transaction?: string | undefined;
  readonly id?: string | undefined;
  readonly quiet?: boolean | undefined;
}

async function queryOf(file: string | undefined, flags: StatusFlags): Promise<StatusQuery> {
  const given = [file !== undefined, flags.transaction !== undefined, flags.id !== undefined];
  if (given.filter(Boolean).length !== 1) {
    throw new UsageError("name one settlement: a payment file (or -), --transaction or --id");
  }
  const named =
    flags.transaction !== undefined
      ? checkStatusQuery({ transaction: flags.transaction.trim() })
      : flags.id !== undefined
        ? checkStatusQuery({ paymentIdentifier: flags.id.trim() })
        : undefined;
  if (named && !named.ok) throw new UsageError(named.failure.message);
  if (named?.ok) return named.query;
  return { request: await readRequest(file, file as string) };
}

/** What the chain says, in a few words: "mined in block 16, 1 confirmation". */
function onChainWords(chain: SettlementStatus["chain"]): string {
  if (!chain) return "";
  if ("error" in chain) return `; the chain could not be asked: ${chain.error}`;
  const unit = chain.network.startsWith("solana:") ? "slot" : "block";
  const block = chain.block ? ` in ${unit} ${chain.block}` : "";
  const depth =
    chain.confirmations !== undefined
      ? `, ${chain.confirmations} confirmation${chain.confirmations === 1 ? "" : "s"}`
      : "";
  return `; on ${chain.network}: ${chain.onChain}${chain.onChain === "unknown" ? "" : block}${depth}`;
}

/** The one line for people on stderr, as settle and verify print theirs. */
function summarizeStatus(out: HumanOutput, status: SettlementStatus): void {
  if (!status.found) {
    note(out, `${chalk.red("✖ not found")}: ${status.detail ?? ""}`);
    return;
  }
  const meaning = status.meaning ? ` (${status.meaning})` : "";
  note(
    out,
    `${chalk.green("✔ found")} ${chalk.bold(status.state ?? "")}${meaning}${onChainWords(status.chain)}`,
  );
}

export async function runStatus(file: string | undefined, flags: StatusFlags): Promise<number> {
  const out = humanOutput(flags.quiet);
  const query = await queryOf(file, flags);
  const facilitator = await facilitatorFrom(loadConfig(flags), false, { store: true });
  try {
    const status = await facilitator.status(query);
    await printJson(status);
    summarizeStatus(out, status);
    return status.found ? 0 : 1;
  } catch (error) {
    if (!(error instanceof FacilitatorError)) throw error;
    const { code, message } = error.failure;
    await printJson({ found: false, error: code, message });
    note(out, `${chalk.red("✖ failed")} ${chalk.bold(code)}: ${message}`);
    return 3;
  } finally {
    await finish(facilitator);
  }
}
