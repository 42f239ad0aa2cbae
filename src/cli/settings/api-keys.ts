/** The API keys file, checked whole at start and reload; a mistake names the entry, not the key. */
import { getAddress, isAddress } from "viem";
import type { ApiKey, ApiKeys } from "../../http/callers.js";
import { DEFAULT_KEY_RATE, MAX_RATE } from "../../http/rates.js";
import { isObject } from "../../protocol/words.js";
import { readRegularFile, readSmallFile, SMALL_FILE_LIMIT_BYTES } from "../io/bounded-read.js";
import { UsageError } from "../io/errors.js";
import { givenFor, type SettingSources } from "./setting-resolver.js";
import { SETTINGS } from "./settings.js";

/** Long enough that guessing is hopeless; what `openssl rand -hex 16` prints is 32. */
const MIN_KEY_LENGTH = 24;
const MAX_KEYS = 10_000;

/** The API keys file the flag or the environment names, read and checked; none without one. */
export function readApiKeys(sources: SettingSources): ApiKeys | undefined {
  const [given] = givenFor(SETTINGS.apiKeysFile, sources);
  if (!given) return undefined;
  const named = SETTINGS.apiKeysFile.parse(given.value, given.source);
  return readApiKeysFile(named, given.source.name, sources.env);
}

/** The keys in `file`; `regularOnly` (reloads): a pipe or FIFO is refused, not waited on. */
export function readApiKeysFile(
  file: string,
  source: string,
  env: NodeJS.ProcessEnv,
  regularOnly = false,
): ApiKeys {
  const text = regularOnly
    ? readRegularFile(file, SMALL_FILE_LIMIT_BYTES, `${source} ${file}`).text
    : readSmallFile(file, source, env);
  // An empty file is one being written (truncated first): never "no keys".
  if (text.trim() === "") throw new UsageError(`${source} ${file} is empty`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${source} ${file} is not JSON`);
  }
  return parseApiKeys(parsed, `${source} ${file}`);
}

export function parseApiKeys(value: unknown, where: string): ApiKeys {
  const wrong = (what: string) => new UsageError(`${where}: ${what}`);
  if (!isObject(value)) {
    throw wrong(
      'must be an object: {"keys": [{"name", "key", "receivers", "rate"}], "anonymous", "rate"}',
    );
  }
  const { keys, anonymous, rate, ...rest } = value as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw wrong(`unknown field ${JSON.stringify(unknown.slice(0, 40))}`);
  if (anonymous !== undefined && typeof anonymous !== "boolean") {
    throw wrong("anonymous must be true or false");
  }
  const fileRate = rateOf(rate, "rate", wrong) ?? DEFAULT_KEY_RATE;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_KEYS) {
    throw wrong(`keys must be a list of 1 to ${MAX_KEYS} keys`);
  }
  const names = new Set<string>();
  const secrets = new Set<string>();
  const parsed = keys.map((entry, i): ApiKey => {
    const at = (what: string) => wrong(`keys[${i}]: ${what}`);
    if (typeof entry !== "object" || entry === null) throw at("must be an object");
    const { name, key, receivers, rate: own, ...extra } = entry as Record<string, unknown>;
    const stray = Object.keys(extra)[0];
    if (stray !== undefined) throw at(`unknown field ${JSON.stringify(stray.slice(0, 40))}`);
    if (typeof name !== "string" || !/^[\x21-\x7e][\x20-\x7e]{0,63}$/.test(name)) {
      throw at("name must be 1 to 64 printable characters");
    }
    if (names.has(name)) throw at(`the name ${name} is used twice`);
    names.add(name);
    // Never quoted back: a message about a key names its entry, not the key.
    if (typeof key !== "string" || key.trim() !== key || key.length < MIN_KEY_LENGTH) {
      throw at(
        `${name}'s key must be at least ${MIN_KEY_LENGTH} characters, without spaces around`,
      );
    }
    if (key.length > 512 || !/^[\x21-\x7e]+$/.test(key)) throw at(`${name}'s key is not a key`);
    if (secrets.has(key)) throw at(`${name}'s key is also another entry's`);
    secrets.add(key);
    const list = receivers ?? [];
    if (!Array.isArray(list) || list.some((r) => typeof r !== "string" || !isAddress(r))) {
      throw at(`${name}'s receivers must be a list of 0x addresses (the payTo it sells under)`);
    }
    const perMinute = rateOf(own, `${name}'s rate`, at) ?? fileRate;
    return { name, key, receivers: list.map((r) => getAddress(r as string)), perMinute };
  });
  return { keys: parsed, anonymous: anonymous === true };
}

/** `{"perMinute": N}`: requests a minute on /verify and /settle, from 1 to MAX_RATE. */
function rateOf(
  value: unknown,
  what: string,
  wrong: (what: string) => UsageError,
): number | undefined {
  if (value === undefined) return undefined;
  const perMinute = (value as { perMinute?: unknown } | null)?.perMinute;
  const keys = isObject(value) ? Object.keys(value) : [];
  if (
    keys.length !== 1 ||
    typeof perMinute !== "number" ||
    !Number.isSafeInteger(perMinute) ||
    perMinute < 1 ||
    perMinute > MAX_RATE
  ) {
    throw wrong(
      `${what} must be {"perMinute": N}, a whole number of requests from 1 to ${MAX_RATE}`,
    );
  }
  return perMinute;
}
