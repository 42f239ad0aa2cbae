/**
 * Who calls the server: the API key a request presents names its holder (and the sellers it may
 * act for). Keys are compared by their SHA-256 digests, each in constant time, so neither the
 * time taken nor the lookup says anything about a key.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Caller } from "../protocol/request.js";

export interface ApiKey {
  /** Shown in logs and messages; the key itself never is. */
  readonly name: string;
  readonly key: string;
  /** The receivers (payTo addresses) its holder may act for as a seller. */
  readonly receivers: readonly string[];
}

export interface ApiKeys {
  readonly keys: readonly ApiKey[];
  /** Whether a request without a key is served (as anonymous) while these keys name callers. */
  readonly anonymous: boolean;
}

export type Identified =
  | { readonly ok: true; readonly caller?: Caller | undefined }
  | { readonly ok: false; readonly presented: boolean };

const digest = (text: string) => createHash("sha256").update(text).digest();

/**
 * Whether a request must present a key: with the one unnamed key always, with named keys unless
 * they let anonymous requests through, with none never.
 */
export function keyRequired(apiKey: string | undefined, apiKeys: ApiKeys | undefined): boolean {
  return apiKey !== undefined || (apiKeys !== undefined && !apiKeys.anonymous);
}

/** Recognises the callers of one server: `apiKey` (one unnamed key) and `apiKeys` (named ones). */
export function callerRecognizer(apiKey: string | undefined, apiKeys: ApiKeys | undefined) {
  const known = [
    ...(apiKey ? [{ name: "api key", key: apiKey, receivers: [] }] : []),
    ...(apiKeys?.keys ?? []),
  ].map((k) => ({
    digest: digest(k.key),
    caller: { name: k.name, receivers: k.receivers } satisfies Caller,
  }));
  const anonymous = !keyRequired(apiKey, apiKeys);
  return {
    identify(authorization: string | undefined): Identified {
      const bearer = /^Bearer\s+(.+)$/i.exec(authorization ?? "")?.[1]?.trim();
      if (bearer === undefined || bearer === "") return anonymous ? { ok: true } : fail(false);
      const presented = digest(bearer);
      let found: Caller | undefined;
      // Every key compared, whichever matches: the time taken is the same for all.
      for (const k of known) if (timingSafeEqual(k.digest, presented)) found = k.caller;
      return found ? { ok: true, caller: found } : fail(true);
    },
  };
}

const fail = (presented: boolean): Identified => ({ ok: false, presented });
