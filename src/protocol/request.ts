/** A request body of either dialect → one PaymentRequest, or a Failure naming the field. */
import { exceedsBounds } from "./bounds.js";
import { type Failure, failed, failure } from "./errors.js";
import {
  describeIssue,
  payloadV1Schema,
  payloadV2Schema,
  requirementsV1Schema,
  requirementsV2Schema,
  WAIT_UNTIL,
  type WaitUntil,
} from "./schemas.js";
import { isObject } from "./words.js";
import type * as z from "./zod.js";

export type Dialect = "reference" | "x402";

/** Requirements of either version, with the v1 `maxAmountRequired` read as `amount`. */
export type Requirements = Readonly<z.infer<typeof requirementsV2Schema>>;

/** Who asks, as authenticated by the shell (an API key's holder, or the operator); else anonymous. */
export interface Caller {
  /** The API key's name, for logs and messages; never the key. */
  readonly name: string;
  /** The receivers (payTo addresses) it may act for as a seller; "any": the operator itself. */
  readonly receivers: readonly string[] | "any";
}

/** Whether `caller` may act for the seller `receiver` (an address). */
export function actsFor(caller: Caller | undefined, receiver: string): boolean {
  if (!caller) return false;
  if (caller.receivers === "any") return true;
  const wanted = receiver.toLowerCase();
  return caller.receivers.some((r) => r.toLowerCase() === wanted);
}

export interface PaymentRequest {
  readonly dialect: Dialect;
  readonly x402Version: 1 | 2;
  /** paymentPayload.accepted.scheme (v2) or paymentPayload.scheme (v1). */
  readonly payloadScheme: string;
  /** paymentPayload.accepted.network (v2) or paymentPayload.network (v1). */
  readonly payloadNetwork: string;
  /** The scheme-specific object, paymentPayload.payload. */
  readonly payload: Readonly<Record<string, unknown>>;
  readonly requirements: Requirements;
  /** paymentPayload.extensions (v2): gas sponsoring, payment identifiers, ... */
  readonly extensions?: Readonly<Record<string, unknown>> | undefined;
  /** paymentPayload.resource (v2), as the buyer echoes it: what bazaar discovery catalogues. */
  readonly resource?: unknown;
  /** How the caller named the two objects, so messages point at their own fields. */
  readonly paths: { readonly payload: string; readonly requirements: string };
  readonly waitUntil?: WaitUntil | undefined;
  /** Who asks; absent when anonymous. */
  readonly caller?: Caller | undefined;
}

export type ParsedRequest =
  | { readonly ok: true; readonly request: PaymentRequest }
  | {
      readonly ok: false;
      readonly dialect: Dialect;
      readonly failure: Failure;
      /** The payload's `from`, when it could be read: x402 answers carry it even on failure. */
      readonly payer?: string | undefined;
    };

export function parseJson(
  text: string,
): { ok: true; value: unknown } | { ok: false; failure: Failure } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    // The parser's message quotes the text, which may be a key file: say where, never what.
    const text = error instanceof Error ? error.message : "";
    const position = /at position (\d+)/.exec(text)?.[1];
    const where = position
      ? ` (at position ${position})`
      : /end of JSON input/.test(text)
        ? " (it ends too early)"
        : "";
    return failed("invalid_request", `body is not valid JSON${where}`);
  }
}

/** The x402 dialect is recognised by its field names; anything else is the reference dialect. */
export function dialectOf(body: unknown): Dialect {
  return isObject(body) && ("paymentPayload" in body || "paymentRequirements" in body)
    ? "x402"
    : "reference";
}

/** Reads `payload.authorization.from` when present, whatever else is wrong. */
export function payerHint(payload: unknown): string | undefined {
  if (!isObject(payload) || !isObject(payload.payload)) return undefined;
  const inner = payload.payload;
  const from = isObject(inner.authorization)
    ? (inner.authorization.from ?? inner.authorization.owner)
    : isObject(inner.permit2Authorization)
      ? inner.permit2Authorization.from
      : undefined;
  return typeof from === "string" ? from : undefined;
}

export function parseRequest(body: unknown): ParsedRequest {
  const dialect = dialectOf(body);
  const paths =
    dialect === "x402"
      ? { payload: "paymentPayload", requirements: "paymentRequirements" }
      : { payload: "payload", requirements: "requirements" };
  const reject = (f: Failure, payer?: string): ParsedRequest => ({
    ok: false,
    dialect,
    failure: f,
    payer,
  });

  if (!isObject(body)) {
    return reject(failure("invalid_request", "body must be a JSON object"));
  }
  const rawPayload = body[paths.payload];
  const payer = payerHint(rawPayload);
  const invalid = (message: string) => reject(failure("invalid_request", message), payer);
  // Before anything keeps the body alive: free-form fields must stay small (issue 9).
  const exceeded = exceedsBounds(body, [paths.payload, paths.requirements]);
  if (exceeded) return reject(invalidField(exceeded.message, exceeded.field), payer);
  for (const name of [paths.payload, paths.requirements]) {
    const value = body[name];
    if (!isObject(value)) {
      const found = value === undefined ? "it is missing" : `got ${describeValue(value)}`;
      return invalid(`${name} must be an object; ${found}`);
    }
  }

  const waitUntil = body.waitUntil as WaitUntil | undefined;
  if (waitUntil !== undefined && !WAIT_UNTIL.includes(waitUntil)) {
    return invalid(`waitUntil must be one of ${WAIT_UNTIL.join(", ")}`);
  }

  const version = (rawPayload as Record<string, unknown>).x402Version;
  if (typeof version !== "number") return invalid(`${paths.payload}.x402Version must be a number`);
  if (version !== 1 && version !== 2) {
    return reject(
      failure("unsupported_version", `x402 version ${version} is not supported (1 and 2 are)`),
      payer,
    );
  }

  /** The first schema issue of `paths[which]`, answered. */
  const invalidAt = (error: z.core.$ZodError, which: "payload" | "requirements") =>
    reject(invalidField(describeIssue(error, paths[which]), paths[which]), payer);
  if (version === 2) {
    const payload = payloadV2Schema.safeParse(rawPayload);
    if (!payload.success) return invalidAt(payload.error, "payload");
    const requirements = requirementsV2Schema.safeParse(body[paths.requirements]);
    if (!requirements.success) return invalidAt(requirements.error, "requirements");
    const { accepted, extensions, resource } = payload.data;
    return {
      ok: true,
      request: {
        dialect,
        x402Version: 2,
        payloadScheme: accepted.scheme,
        payloadNetwork: accepted.network,
        payload: payload.data.payload,
        requirements: requirements.data,
        extensions: extensions ?? undefined,
        resource,
        paths,
        waitUntil,
      },
    };
  }

  const payload = payloadV1Schema.safeParse(rawPayload);
  if (!payload.success) return invalidAt(payload.error, "payload");
  const requirements = requirementsV1Schema.safeParse(body[paths.requirements]);
  if (!requirements.success) return invalidAt(requirements.error, "requirements");
  const { maxAmountRequired, ...rest } = requirements.data;
  return {
    ok: true,
    request: {
      dialect,
      x402Version: 1,
      payloadScheme: payload.data.scheme,
      payloadNetwork: payload.data.network,
      payload: payload.data.payload,
      requirements: { ...rest, amount: maxAmountRequired },
      paths,
      waitUntil,
    },
  };
}

/** invalid_request, with the x402 reason telling payload from requirements problems. */
export function invalidField(message: string, path: string): Failure {
  const x402Reason = /requirements/i.test(path.split(".")[0] ?? "")
    ? "invalid_payment_requirements"
    : "invalid_payload";
  return failure("invalid_request", message, { x402Reason });
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}
