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

/** The reply, with the result's extension responses when it has any. */
function withExtensionResponses(reply: Reply, result: VerifyResult | SettleResult): Reply {
  return result.ok && result.extensionResponses
    ? { ...reply, extensionResponses: result.extensionResponses }
    : reply;
}

type Operation = "verify" | "settle";

/**
 * Only infrastructure failures leave 200 in the x402 dialect (resource servers read the body):
 * a proxy or balancer sees a 503, and the official client still gets the body.
 */
const X402_KEEPS_STATUS = new Set([
  "chain_unavailable",
  "store_unavailable",
  "internal_error",
  "overloaded",
]);
function x402Status(f: Failure): number {
  return X402_KEEPS_STATUS.has(f.code) ? statusOf(f) : 200;
}

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
  if (dialect === "reference") {
    return result.ok
      ? {
          status: 200,
          body: { success: true, payer: result.payer, ...extraOf(result) },
          payer: result.payer,
        }
      : referenceFailure(result.failure, result.payer ?? payerHint);
  }
  if (result.ok) {
    return { status: 200, body: { isValid: true, payer: result.payer, ...extraOf(result) } };
  }
  const body: Record<string, unknown> = {
    isValid: false,
    invalidReason: x402Reason(result.failure, "verify"),
    invalidMessage: result.failure.message,
  };
  const payer = result.payer ?? payerHint;
  if (payer) body.payer = payer;
  return { status: x402Status(result.failure), body, failure: result.failure };
}

export function renderSettle(
  dialect: Dialect,
  result: SettleResult,
  context: { network: string; payerHint?: string | undefined },
): Reply {
  const payer = result.payer ?? context.payerHint;
  if (dialect === "reference") {
    return result.ok
      ? {
          status: 200,
          body: {
            success: true,
            transactionHash: result.transactionHash,
            ...(result.amount !== undefined ? { amount: result.amount } : {}),
            ...extraOf(result),
          },
          payer,
        }
      : referenceFailure(result.failure, payer, result.transactionHash);
  }
  if (result.ok) {
    return {
      status: 200,
      body: {
        success: true,
        payer,
        transaction: result.transactionHash,
        network: context.network,
        ...(result.amount !== undefined ? { amount: result.amount } : {}),
        ...extraOf(result),
      },
    };
  }
  const body: Record<string, unknown> = {
    success: false,
    errorReason: x402Reason(result.failure, "settle"),
    errorMessage: result.failure.message,
    transaction: result.transactionHash ?? "",
    network: context.network,
  };
  if (payer) body.payer = payer;
  return { status: x402Status(result.failure), body, failure: result.failure };
}

const withCaller = (request: PaymentRequest, caller: Caller | undefined): PaymentRequest =>
  caller ? { ...request, caller } : request;

/** The payer, for x402 answers that carry it even on failure. */
const payerOf = (request: PaymentRequest) => payerHint({ payload: request.payload });

function networkHint(body: unknown): string {
  const read = (value: unknown, ...path: string[]): unknown =>
    path.reduce<unknown>(
      (node, key) =>
        typeof node === "object" && node !== null
          ? (node as Record<string, unknown>)[key]
          : undefined,
      value,
    );
  const candidates = [
    read(body, "paymentPayload", "accepted", "network"),
    read(body, "paymentPayload", "network"),
    read(body, "paymentRequirements", "network"),
  ];
  const found = candidates.find((c) => typeof c === "string");
  return typeof found === "string" ? found : "";
}

export async function handleVerify(
  facilitator: Facilitating,
  body: unknown,
  options: { caller?: Caller | undefined } = {},
): Promise<Reply> {
  const parsed = parseRequest(body);
  if (!parsed.ok) {
    return renderVerify(parsed.dialect, { ok: false, failure: parsed.failure }, parsed.payer);
  }
  const request = withCaller(parsed.request, options.caller);
  const result = await facilitator.verify(request);
  return withExtensionResponses(renderVerify(request.dialect, result, payerOf(request)), result);
}

export async function handleSettle(
  facilitator: Facilitating,
  body: unknown,
  /** A waitUntil given outside the body (the CLI flag) wins over the body's. */
  options: { waitUntil?: WaitUntil | undefined; caller?: Caller | undefined } = {},
): Promise<Reply> {
  const parsed = parseRequest(body);
  if (!parsed.ok) {
    return renderSettle(
      parsed.dialect,
      { ok: false, failure: parsed.failure },
      { network: networkHint(body), payerHint: parsed.payer },
    );
  }
  const request = withCaller(parsed.request, options.caller);
  const result = await facilitator.settle(request, options.waitUntil ?? request.waitUntil);
  const reply = renderSettle(request.dialect, result, {
    network: request.payloadNetwork,
    payerHint: payerOf(request),
  });
  return withExtensionResponses(reply, result);
}

/** A failure decided outside the facilitator (CLI interrupted), in the dialect of `body`. */
export function renderFailure(
  op: Operation,
  body: unknown,
  f: Failure,
  transactionHash?: Hex,
): Reply {
  const dialect = dialectOf(body);
  const payer =
    typeof body === "object" && body !== null
      ? payerHint(
          (body as Record<string, unknown>)[dialect === "x402" ? "paymentPayload" : "payload"],
        )
      : undefined;
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
