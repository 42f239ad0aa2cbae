/** `facilitator status`: one settlement, as the journal or store and the chain know it. */
import { checkStatusQuery, type StatusQuery } from "../../core/status.js";
import { FacilitatorError } from "../../protocol/errors.js";
import { parseJson, parseRequest } from "../../protocol/request.js";
import { type ConfigFlags, loadConfig } from "../config.js";
import { UsageError } from "../errors.js";
import { facilitatorFrom } from "../facilitator.js";
import { readSource } from "../input.js";
import { printJson } from "../output.js";

export interface StatusFlags extends ConfigFlags {
  readonly transaction?: string | undefined;
  readonly id?: string | undefined;
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
  const text = await readSource(file as string);
  const json = parseJson(text);
  if (!json.ok) throw new UsageError(`${file}: ${json.failure.message}`);
  const parsed = parseRequest(json.value);
  if (!parsed.ok) throw new UsageError(`${file}: ${parsed.failure.message}`);
  return { request: parsed.request };
}

export async function runStatus(file: string | undefined, flags: StatusFlags): Promise<number> {
  const query = await queryOf(file, flags);
  const facilitator = await facilitatorFrom(loadConfig(flags), false, { store: true });
  try {
    const status = await facilitator.status(query);
    await printJson(status);
    return status.found ? 0 : 1;
  } catch (error) {
    if (!(error instanceof FacilitatorError)) throw error;
    await printJson({ found: false, error: error.failure.code, message: error.failure.message });
    return 3;
  } finally {
    if (facilitator.journal.shared) await facilitator.journal.close();
  }
}
