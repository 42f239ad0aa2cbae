/** What `verify` and `settle` share: read the request, run it through the core, print, exit code. */

import type { Facilitator } from "../../../facilitator.js";
import { type Failure, failure, statusOf } from "../../../protocol/errors.js";
import { type Caller, parseJson } from "../../../protocol/request.js";
import {
  exitCodeOf,
  handleSettle,
  handleVerify,
  type Reply,
  renderFailure,
} from "../../../protocol/respond.js";
import type { WaitUntil } from "../../../protocol/schemas.js";
import { field, isObject } from "../../../protocol/words.js";
import { warnIfFromAnotherDevnet } from "../../facilitator/devnet-marker.js";
import { facilitatorFrom, finish } from "../../facilitator/facilitator.js";
import { SendingDoor } from "../../facilitator/sending-door.js";
import { warmCurve } from "../../facilitator/warm-curve.js";
import { mayHaveBroadcast } from "../../facilitator/watched-journal.js";
import { UsageError } from "../../io/errors.js";
import { isStdin, pipedFailure, readJson, readSource } from "../../io/input.js";
import { onInterrupt, signalExitCode } from "../../io/interrupt.js";
import { humanOutput, printJson, startSpinner, summarize, warn } from "../../io/output.js";
import { requestChain, settleBesidePool, takeSettleTurn } from "../../locks/settle-turn.js";
import { type CliConfig, type ConfigFlags, loadConfig } from "../../settings/config.js";

export interface PaymentFlags extends ConfigFlags {
  readonly requirements?: string | undefined;
  readonly waitUntil?: WaitUntil | undefined;
  /** settle, upto: what to charge, in atomic units (at most what the payer signed for). */
  readonly amount?: string | undefined;
  readonly quiet?: boolean | undefined;
}

/** The request with the amount to settle set (an upto payment's requirements carry it). */
function withAmount(body: unknown, amount: string | undefined): unknown {
  if (amount === undefined) return body;
  if (!/^[0-9]{1,78}$/.test(amount)) {
    throw new UsageError(
      "--amount takes a whole number of the token's atomic units, such as 4200 (0.0042 of a 6-decimal token); pay --amount is the one in token units",
    );
  }
  if (!isObject(body)) return body;
  const name = "paymentRequirements" in body ? "paymentRequirements" : "requirements";
  const requirements = body[name];
  if (typeof requirements !== "object" || requirements === null) return body;
  const key = "maxAmountRequired" in requirements ? "maxAmountRequired" : "amount";
  return { ...body, [name]: { ...requirements, [key]: amount } };
}

type Operation = "verify" | "settle";

/** The request body: FILE as-is, or with --requirements, FILE as the payload of a new body. */
async function readBody(file: string | undefined, requirementsFile: string | undefined) {
  const text = await readSource(file);
  // `pay … > req.json` that failed leaves an empty file: say that, not "payload is missing".
  if (!isStdin(file) && text.trim() === "") {
    throw new UsageError(
      `${file} is empty: did the command that wrote it fail? (check its exit status and what it printed on stderr)`,
    );
  }
  const main = parseJson(text);
  const piped = isStdin(file) ? pipedFailure(text, main.ok ? main.value : undefined) : undefined;
  if (piped) return { piped };
  if (!main.ok) throw new UsageError(`${file ?? "stdin"}: ${main.failure.message}`);
  if (!requirementsFile) return { body: main.value };
  const requirements = await readJson(requirementsFile, requirementsFile);
  return { body: { payload: main.value, requirements } };
}

/** The reply's exit status; no RPC or no key (the operator's to fix) is a configuration error. */
function exitStatus(reply: Reply, body: unknown, facilitator: Facilitator): number {
  const f = reply.failure;
  if (!f || requestChain(body) === undefined) return exitCodeOf(reply);
  if (f.code === "unsupported_network") return 2;
  const noKey = f.code === "settlement_failed" && statusOf(f) >= 500;
  return noKey && facilitator.signers.size === 0 ? 2 : exitCodeOf(reply);
}

/** What an interrupted command answers: whether its settlement may have been broadcast. */
function interruptedFailure(
  op: Operation,
  facilitator: Facilitator | undefined,
): [Failure, `0x${string}`?] {
  const journal = facilitator?.journal;
  const hash = mayHaveBroadcast(journal);
  if (op === "settle" && hash) {
    return [
      failure(
        "settlement_pending",
        `interrupted after the transaction was broadcast: it may still land; settle the same request again to follow it (it is in the journal ${journal?.where}; it is never paid twice)`,
        { status: 500 },
      ),
      hash,
    ];
  }
  const what = op === "settle" ? "nothing was broadcast; the payment can be settled later" : "";
  return [failure("interrupted", `interrupted before an answer${what ? `: ${what}` : ""}`)];
}

/** How far a settle waits: the flag, else the body's own `waitUntil`, else confirmed. */
function waitUntilOf(body: unknown, flags: PaymentFlags): string {
  const own = field(body, "waitUntil");
  return flags.waitUntil ?? (typeof own === "string" ? own : "confirmed");
}

/** Who runs a command holds the keys: it may ask for anything they can sign, refunds included. */
const OPERATOR: Caller = { name: "command line", receivers: "any" };

export async function runPayment(
  op: Operation,
  file: string | undefined,
  flags: PaymentFlags,
): Promise<number> {
  const out = humanOutput(flags.quiet);
  const config = loadConfig(flags);
  // Its key's address and its signature need the curve's table: built before the input comes.
  if (op === "settle") warmCurve();
  const answer = async (reply: Reply) => {
    await printJson(reply.body);
    summarize(out, op, reply);
    return reply;
  };
  let input: Awaited<ReturnType<typeof readBody>>;
  try {
    input = await readBody(file, flags.requirements);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    await answer(renderFailure(op, undefined, failure("invalid_request", error.message)));
    return 2;
  }
  if (input.piped) {
    // The command before the pipe failed and has said why: pass its answer on, say so in a line.
    const { message } = input.piped;
    await printJson(input.piped.answer ?? { success: false, error: "invalid_request", message });
    if (!flags.quiet) warn(message);
    return 2;
  }

  const turn =
    op === "settle"
      ? await takeSettleTurn(config, flags.quiet ? undefined : warn)
      : ({ kind: "turn", config } as const);
  if (turn.kind === "timeout") {
    return exitCodeOf(await answer(renderFailure(op, input.body, turn.failure)));
  }
  if (turn.kind === "interrupted") {
    await answer(renderFailure(op, input.body, interruptedFailure(op, undefined)[0]));
    return signalExitCode(turn.signal);
  }
  try {
    return await answerPayment(op, file, input.body, turn.config, flags);
  } finally {
    turn.locks?.release();
  }
}

async function answerPayment(
  op: Operation,
  file: string | undefined,
  body: unknown,
  config: CliConfig,
  flags: PaymentFlags,
): Promise<number> {
  const out = humanOutput(flags.quiet);
  // Holds the settle's broadcasts (their journal record) until the pool is read.
  const gate = new SendingDoor();
  const facilitator = await facilitatorFrom(config, op === "settle", {
    // --quiet: nothing on stderr, not even whose key lease it waits out.
    ...(flags.quiet ? { onSignerWait: () => undefined } : {}),
    door: gate,
  });
  if (!flags.quiet) await warnIfFromAnotherDevnet(file, facilitator);
  const waitUntil = waitUntilOf(body, flags);
  const waits = op === "settle" && waitUntil === "confirmed";
  // Listening before the spinner shows: a Ctrl-C the moment "settling…" appears is answered too.
  const interrupt = onInterrupt();
  const spinner = out.enabled && waits ? await startSpinner("settling…") : undefined;
  const started = Date.now();
  const ticker = spinner
    ? setInterval(() => {
        const seconds = Math.round((Date.now() - started) / 1000);
        const hash = mayHaveBroadcast(facilitator.journal);
        spinner.text = hash
          ? `waiting for ${hash.slice(0, 10)}…${hash.slice(-6)} to be mined (${seconds} s)`
          : `settling… (${seconds} s)`;
      }, 250)
    : undefined;
  let reply: Reply;
  let exitCode: number;
  try {
    const answer =
      op === "verify"
        ? handleVerify(facilitator, body, { caller: OPERATOR })
        : // Once other processes' transactions with the key are mined (settle-turn.ts).
          settleBesidePool(
            facilitator,
            body,
            config.confirmTimeoutMs,
            gate,
            () =>
              handleSettle(facilitator, withAmount(body, flags.amount), {
                waitUntil: flags.waitUntil,
                caller: OPERATOR,
              }),
            (blocked) => renderFailure("settle", body, blocked),
          );
    const outcome = await Promise.race([answer, interrupt.signal]);
    if (typeof outcome === "string") {
      const [f, hash] = interruptedFailure(op, facilitator);
      reply = renderFailure(op, body, f, hash);
      exitCode = signalExitCode(outcome);
    } else {
      reply = outcome;
      exitCode = exitStatus(reply, body, facilitator);
    }
  } finally {
    // Before anything else is written: the spinner owns the terminal's last line.
    clearInterval(ticker);
    spinner?.stop();
    interrupt.dispose();
  }
  await printJson(reply.body);
  summarize(out, op, reply, waitUntil);
  // The answer is out: written down as given, a retry of the payment must not get it again.
  await finish(facilitator);
  return exitCode;
}
