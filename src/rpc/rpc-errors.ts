/** RPC failures in words an operator can act on, and URLs with their secrets cut out. */
import { BaseError, HttpRequestError, SocketClosedError, TimeoutError } from "viem";
import { firstLine } from "../protocol/words.js";
import { RateLimitedError } from "./provider-limits.js";

/** Only scheme, host and port: RPC URLs often carry an API key in the path or the userinfo. */
export function redactUrl(url: string): string {
  const parsed = URL.parse(url);
  if (!parsed) return "<invalid url>";
  const tail = parsed.pathname !== "/" || parsed.search ? "/…" : "";
  return `${parsed.protocol}//${parsed.host}${tail}`;
}

/** True when the error means the node could not be reached (as opposed to the node answering). */
export function isUnreachable(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  return Boolean(
    error.walk(
      (e) =>
        e instanceof HttpRequestError ||
        e instanceof TimeoutError ||
        e instanceof SocketClosedError,
    ),
  );
}

/** True when the request certainly never reached the node (refused, rate-limited): nothing sent. */
export function neverReachedNode(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  if (error.walk((e) => e instanceof RateLimitedError)) return true;
  const http = error.walk((e) => e instanceof HttpRequestError);
  if (!(http instanceof HttpRequestError)) return false;
  let cause: unknown = http.cause;
  while (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN") return true;
    cause = cause.cause;
  }
  return false;
}

/** Socket error codes, as a few words for a one-line message. */
const SOCKET_ERRORS: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "timed out",
  UND_ERR_CONNECT_TIMEOUT: "timed out",
  UND_ERR_SOCKET: "connection closed",
};

/** A timeout, rate limit or HTTP status: as a metric label ("http_503") and in a few words. */
function transportFailure(error: unknown): { kind: string; words: string } | undefined {
  if (!(error instanceof BaseError)) return undefined;
  if (error.walk((e) => e instanceof TimeoutError)) return { kind: "timeout", words: "timed out" };
  const limited = error.walk((e) => e instanceof RateLimitedError);
  if (limited instanceof RateLimitedError) {
    const words = `rate limited: ${limited.status === 429 ? "HTTP 429" : limited.details}`;
    return { kind: "rate_limited", words };
  }
  const failed = error.walk((e) => e instanceof HttpRequestError);
  if (!(failed instanceof HttpRequestError) || failed.status === undefined) return undefined;
  return { kind: `http_${failed.status}`, words: `HTTP ${failed.status}` };
}

/** Why a node did not answer, in a few words and without its URL (viem's messages carry it). */
export function unreachableReason(error: unknown): string {
  const known = transportFailure(error);
  if (known) return known.words;
  let cause: unknown = error;
  let innermost = "";
  while (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string") return SOCKET_ERRORS[code] ?? code;
    innermost = firstLine(cause);
    cause = cause.cause;
  }
  // The innermost words ("bad port"), unless they quote a URL.
  if (innermost && !innermost.includes("://")) return innermost.replace(/\.$/, "");
  return "no answer";
}

/** A transport failure in a word, for a metric label: "timeout", "http_503", "connection". */
export function rpcErrorKind(error: unknown): string {
  return transportFailure(error)?.kind ?? "connection";
}
