/** What `serve` answers while it stops, and to requests unanswered when its time is up. */
import { failure } from "../protocol/errors.js";
import { parseJson } from "../protocol/request.js";
import { renderFailure } from "../protocol/respond.js";
import { errorResponse, fromReply, type HttpRequest, type HttpResponse } from "./handler.js";
import { overloaded } from "./limits.js";

/** What a request that arrives while the server stops is answered. */
export const stoppingFailure = () =>
  overloaded("the server is stopping; retry on another replica, or here once it restarts");

/** A settle whose answer did not come before the stop's time ran out. */
const pendingAtStop = () =>
  failure(
    "settlement_pending",
    "the server stopped before this settle's answer: it may have been broadcast, and it is in the settlement store, whose next start follows it; retry the same payment to learn its outcome (it is never paid twice)",
  );

/** The answer for a request still in flight when the stop's time is up. */
export function lateAnswer(request: HttpRequest): HttpResponse {
  const path = request.url.split("?")[0];
  const parsed = parseJson(request.body?.toString("utf8") ?? "");
  if (!parsed.ok || (path !== "/settle" && path !== "/verify")) {
    return errorResponse(stoppingFailure());
  }
  return path === "/settle"
    ? fromReply(renderFailure("settle", parsed.value, pendingAtStop()))
    : fromReply(renderFailure("verify", parsed.value, stoppingFailure()));
}
