/** Who calls: a presented API key names its holder. Keys compare by SHA-256 in constant time. */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Caller } from "../protocol/request.js";
import { DEFAULT_KEY_RATE } from "./rates.js";

export interface ApiKey {
  /** Shown in logs and messages; the key itself never is. */
  readonly name: string;
  readonly key: string;
  /** The receivers (payTo addresses) its holder may act for as a seller. */
  readonly receivers: readonly string[];
  /** Requests a minute on /verify and /settle (rates.ts; DEFAULT_KEY_RATE when absent). */
  readonly perMinute?: number | undefined;
}

export interface ApiKeys {
  readonly keys: readonly ApiKey[];
  /** Whether a request without a key is served (as anonymous) while these keys name callers. */
  readonly anonymous: boolean;
}

export type Identified =
  | {
      readonly ok: true;
      readonly caller?: Caller | undefined;
      /** A named key's rate, requests a minute; absent for anonymous requests and the one key. */
      readonly perMinute?: number | undefined;
    }
  | { readonly ok: false; readonly presented: boolean };

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Whether a key is required: the unnamed key always, named ones unless anonymous is let through. */
export function keyRequired(apiKey: string | undefined, apiKeys: ApiKeys | undefined): boolean {
  return apiKey !== undefined || (apiKeys !== undefined && !apiKeys.anonymous);
}

/** Recognises callers by `apiKey` (unnamed) and `apiKeys` (named; a function when re-read). */
export function callerRecognizer(
  apiKey: string | undefined,
  apiKeys: ApiKeys | (() => ApiKeys | undefined) | undefined,
) {
  const current = typeof apiKeys === "function" ? apiKeys : () => apiKeys;
  const anonymous = !keyRequired(apiKey, current());
  let digested: { from: ApiKeys | undefined; known: Known[] } | undefined;
  const known = (): Known[] => {
    const keys = current();
    if (digested === undefined || digested.from !== keys) {
      digested = { from: keys, known: digestAll(apiKey, keys) };
    }
    return digested.known;
  };
  return {
    identify(authorization: string | undefined): Identified {
      const bearer = /^Bearer\s+(.+)$/i.exec(authorization ?? "")?.[1]?.trim();
      if (bearer === undefined || bearer === "") return anonymous ? { ok: true } : fail(false);
      const presented = digest(bearer);
      let found: Known | undefined;
      // Every key compared, whichever matches: the time taken is the same for all.
      for (const k of known()) if (timingSafeEqual(k.digest, presented)) found = k;
      return found ? { ok: true, caller: found.caller, perMinute: found.perMinute } : fail(true);
    },
  };
}

type Known = { readonly digest: Buffer; readonly caller: Caller; readonly perMinute?: number };

function digestAll(apiKey: string | undefined, apiKeys: ApiKeys | undefined): Known[] {
  const one = apiKey
    ? [{ digest: digest(apiKey), caller: { name: "api key", receivers: [] } }]
    : [];
  const named = (apiKeys?.keys ?? []).map((k) => ({
    digest: digest(k.key),
    caller: { name: k.name, receivers: k.receivers },
    perMinute: k.perMinute ?? DEFAULT_KEY_RATE,
  }));
  return [...one, ...named];
}

const fail = (presented: boolean): Identified => ({ ok: false, presented });
