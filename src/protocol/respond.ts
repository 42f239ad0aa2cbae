/** A request body in, a reply (status and body in the caller's dialect) out: for CLI and HTTP. */
import type { Hex } from "viem";
import { type Failure, statusOf, x402ReasonOf } from "./errors.js";
import {
  type Caller,
  type Dialect,
  dialectOf,
  type PaymentRequest,
  parseRequest,
  payerHint,
} from "./request.js";
import type { SettleResult, VerifyResult } from "./results.js";
import type { WaitUntil } from "./schemas.js";
import { field } from "./words.js";

/** What answers a parsed request: the facilitator, or anything that verifies and settles. */
export interface Facilitating {
  verify(request: PaymentRequest): Promise<VerifyResult>;
  settle(request: PaymentRequest, waitUntil?: WaitUntil): Promise<SettleResult>;
}

export interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly failure?: Failure | undefined;
  /** Who pays, when known, for the request log. */
  readonly payer?: string | undefined;
  /** What became of the payment's extensions: HTTP sends it as the EXTENSION-RESPONSES header. */
  readonly extensionResponses?: Readonly<Record<string, unknown>> | undefined;
}

type Operation = "verify" | "settle";

/** Only infrastructure failures leave 200 in the x402 dialect: a balancer sees their 503. */
const X402_KEEPS_STATUS = new Set([
  "chain_unavailable",
  "store_unavailable",
  "internal_error",
  "overloaded",
]);
function x402Reason(f: Failure, op: Operation): string {
  const reason = x402ReasonOf(f);
  return reason === "unexpected_error" ? `unexpected_${op}_error` : reason;
}

/** A success's scheme facts, as the body's `extra`, when it has any. */
function extraOf(result: { readonly extra?: Readonly<Record<string, unknown>> | undefined }) {
  return result.extra ? { extra: result.extra } : {};
}

function referenceFailure(f: Failure, payer: string | undefined, transactionHash?: string): Reply {
  const body: Record<string, unknown> = { success: false, error: f.code, message: f.message };
  if (transactionHash) body.transactionHash = transactionHash;
  return { status: statusOf(f), body, failure: f, payer };
}

export function renderVerify(dialect: Dialect, result: VerifyResult, payerHint?: string): Reply {
  if (result.ok) {
    const { payer } = result;
    return dialect === "reference"
      ? { status: 200, body: { success: true, payer, ...extraOf(result) }, payer }
      : { status: 200, body: { isValid: true, payer, ...extraOf(result) } };
  }
  const payer = result.payer ?? payerHint;
  if (dialect === "reference") return referenceFailure(result.failure, payer);
  return x402Failure(result.failure, payer, {
    isValid: false,
    invalidReason: x402Reason(result.failure, "verify"),
    invalidMessage: result.failure.message,
  });
}

export function renderSettle(
  dialect: Dialect,
  result: SettleResult,
  context: { network: string; payerHint?: string | undefined },
): Reply {
  const payer = result.payer ?? context.payerHint;
  const { network } = context;
  if (!result.ok && dialect === "reference") {
    return referenceFailure(result.failure, payer, result.transactionHash);
  }
  if (!result.ok) {
    return x402Failure(result.failure, payer, {
      success: false,
      errorReason: x402Reason(result.failure, "settle"),
      errorMessage: result.failure.message,
      transaction: result.transactionHash ?? "",
      network,
    });
  }
  const transaction = result.transactionHash;
  const rest = {
    ...(result.amount !== undefined ? { amount: result.amount } : {}),
    ...extraOf(result),
  };
  return dialect === "reference"
    ? { status: 200, body: { success: true, transactionHash: transaction, ...rest }, payer }
    : { status: 200, body: { success: true, payer, transaction, network, ...rest } };
}

/** An x402-dialect failure: `body`, with the payer when known. */
function x402Failure(f: Failure, payer: string | undefined, body: Record<string, unknown>): Reply {
  const status = X402_KEEPS_STATUS.has(f.code) ? statusOf(f) : 200;
  return { status, body: payer ? { ...body, payer } : body, failure: f };
}

/** The settle's network as the body names it, for x402 answers to a request that did not parse. */
function networkHint(body: unknown): string {
  const payload = field(body, "paymentPayload");
  const found = [
    field(field(payload, "accepted"), "network"),
    field(payload, "network"),
    field(field(body, "paymentRequirements"), "network"),
  ].find((c) => typeof c === "string");
  return typeof found === "string" ? found : "";
}

export const handleVerify = (
  facilitator: Facilitating,
  body: unknown,
  options: { caller?: Caller | undefined } = {},
) => handle("verify", facilitator, body, options);

export const handleSettle = (
  facilitator: Facilitating,
  body: unknown,
  /** A waitUntil given outside the body (the CLI flag) wins over the body's. */
  options: { waitUntil?: WaitUntil | undefined; caller?: Caller | undefined } = {},
) => handle("settle", facilitator, body, options);

async function handle(
  op: Operation,
  facilitator: Facilitating,
  body: unknown,
  options: { waitUntil?: WaitUntil | undefined; caller?: Caller | undefined },
): Promise<Reply> {
  const parsed = parseRequest(body);
  if (!parsed.ok) return renderFailure(op, body, parsed.failure);
  const request = options.caller ? { ...parsed.request, caller: options.caller } : parsed.request;
  // The payer, for x402 answers that carry it even on failure.
  const hint = payerHint({ payload: request.payload });
  let result: VerifyResult | SettleResult;
  let reply: Reply;
  if (op === "verify") {
    result = await facilitator.verify(request);
    reply = renderVerify(request.dialect, result, hint);
  } else {
    const settled = await facilitator.settle(request, options.waitUntil ?? request.waitUntil);
    const context = { network: request.payloadNetwork, payerHint: hint };
    result = settled;
    reply = renderSettle(request.dialect, settled, context);
  }
  // What became of the payment's extensions: HTTP sends it as the EXTENSION-RESPONSES header.
  return result.ok && result.extensionResponses
    ? { ...reply, extensionResponses: result.extensionResponses }
    : reply;
}

/** A failure decided outside the facilitator (CLI interrupted), in the dialect of `body`. */
export function renderFailure(
  op: Operation,
  body: unknown,
  f: Failure,
  transactionHash?: Hex,
): Reply {
  const dialect = dialectOf(body);
  const payer = payerHint(field(body, dialect === "x402" ? "paymentPayload" : "payload"));
  return op === "verify"
    ? renderVerify(dialect, { ok: false, failure: f }, payer)
    : renderSettle(
        dialect,
        { ok: false, failure: f, transactionHash },
        { network: networkHint(body), payerHint: payer },
      );
}

/** CLI exit status: 0 ok, 1 rejected, 2 unusable input, 3 infrastructure, 130 interrupted. */
export function exitCodeOf(reply: Reply): 0 | 1 | 2 | 3 | 130 {
  const f = reply.failure;
  if (!f) return 0;
  if (f.code === "interrupted") return 130;
  if (f.code === "invalid_request") return 2;
  return statusOf(f) < 500 ? 1 : 3;
}
