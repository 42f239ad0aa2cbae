/** What `verify` and `settle` share: read the request, run it through the core, print, exit code. */
import { failure } from "../errors.js";
import { parseJson } from "../protocol/request.js";
import {
  exitCodeOf,
  handleSettle,
  handleVerify,
  type Reply,
  renderSettle,
  renderVerify,
} from "../protocol/respond.js";
import type { WaitUntil } from "../protocol/schemas.js";
import { type ConfigFlags, loadConfig } from "./config.js";
import { UsageError } from "./errors.js";
import { facilitatorFrom } from "./facilitator.js";
import { readSource } from "./input.js";
import { humanOutput, printJson, summarize } from "./output.js";

export interface PaymentFlags extends ConfigFlags {
  readonly requirements?: string | undefined;
  readonly waitUntil?: WaitUntil | undefined;
  readonly quiet?: boolean | undefined;
}

/** The request body: FILE as-is, or with --requirements, FILE as the payload of a new body. */
async function readBody(
  file: string | undefined,
  requirementsFile: string | undefined,
): Promise<{ ok: true; body: unknown } | { ok: false; message: string }> {
  try {
    return await readBodyOrThrow(file, requirementsFile);
  } catch (error) {
    if (error instanceof UsageError) return { ok: false, message: error.message };
    throw error;
  }
}

async function readBodyOrThrow(
  file: string | undefined,
  requirementsFile: string | undefined,
): Promise<{ ok: true; body: unknown } | { ok: false; message: string }> {
  const main = parseJson(await readSource(file));
  if (!main.ok) return { ok: false, message: `${file ?? "stdin"}: ${main.failure.message}` };
  if (!requirementsFile) return { ok: true, body: main.value };
  const requirements = parseJson(await readSource(requirementsFile));
  if (!requirements.ok) {
    return { ok: false, message: `${requirementsFile}: ${requirements.failure.message}` };
  }
  return { ok: true, body: { payload: main.value, requirements: requirements.value } };
}

export async function runPayment(
  op: "verify" | "settle",
  file: string | undefined,
  flags: PaymentFlags,
  onWaitStart?: () => (() => void) | undefined,
): Promise<number> {
  const out = humanOutput(flags.quiet);
  const config = loadConfig(flags);
  const input = await readBody(file, flags.requirements);

  let reply: Reply;
  if (!input.ok) {
    const f = failure("invalid_request", input.message);
    reply =
      op === "verify"
        ? renderVerify("reference", { ok: false, failure: f })
        : renderSettle("reference", { ok: false, failure: f }, { network: "" });
  } else {
    const facilitator = await facilitatorFrom(config, op === "settle");
    const stopWaiting = onWaitStart?.();
    try {
      reply =
        op === "verify"
          ? await handleVerify(facilitator, input.body)
          : await handleSettle(facilitator, input.body, { waitUntil: flags.waitUntil });
    } finally {
      stopWaiting?.();
    }
  }
  await printJson(reply.body);
  summarize(out, op, reply);
  return exitCodeOf(reply);
}
