/** How a setting's value is read; a bad one names its source and never quotes the value. */
import path from "node:path";
import { type Address, getAddress, isAddress } from "viem";
import { SettingError, type SettingParser, wholeNumber } from "../../core/scheme-settings.js";
import { isSolanaAddress } from "../../protocol/solana-networks.js";
import { UsageError } from "../io/errors.js";

/** `parse`, a refusal of core/scheme-settings.ts's parsers (the schemes' rows use them) a usage error. */
export function usage<T>(parse: SettingParser<T>): SettingParser<T> {
  return (value, source) => {
    try {
      return parse(value, source);
    } catch (error) {
      throw error instanceof SettingError ? new UsageError(error.message) : error;
    }
  };
}

/** A file path; in the config file a non-empty string, relative to the file's directory. */
export const filePath: SettingParser<string> = (value, source) => {
  if (source.from !== "file") return String(value);
  if (typeof value !== "string" || value.trim() === "") {
    throw new UsageError(`${source.name} must be a file path (a string)`);
  }
  return source.resolvePath(value);
};

/** A directory, made absolute. */
export const directory: SettingParser<string> = (value) => path.resolve(String(value));

function ordinal(n: number): string {
  const teen = n % 100 >= 11 && n % 100 <= 13;
  const suffix = teen ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

/** Why a string is not a URL, without quoting it: RPC URLs often hold an API key. */
function whyNotUrl(url: string): string {
  if (/\s/.test(url)) return "it contains a space";
  if (!/^[a-z][a-z0-9+.-]*:/i.test(url)) return "it does not start with a scheme such as https://";
  return "it cannot be parsed as a URL";
}

/** Every URL must be http(s); an error names which one and why, never its text. */
function checkUrls(urls: readonly string[], source: string): string[] {
  urls.forEach((url, i) => {
    const which =
      urls.length === 1 ? `the URL of ${source}` : `the ${ordinal(i + 1)} URL of ${source}`;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new UsageError(`${which} is not a valid URL: ${whyNotUrl(url)}`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new UsageError(`${which} must be http or https, not ${parsed.protocol.slice(0, -1)}`);
    }
  });
  return [...urls];
}

/** http(s) URLs: comma-separated text, or a config file array of URL strings. */
export const httpUrls: SettingParser<string[]> = (value, source) => {
  if (source.from !== "file") {
    const urls = String(value)
      .split(",")
      .map((url) => url.trim())
      .filter(Boolean);
    return checkUrls(urls, source.name);
  }
  if (!Array.isArray(value)) throw new UsageError(`${source.name} must be an array of URLs`);
  value.forEach((url, i) => {
    if (typeof url !== "string") {
      throw new UsageError(`the ${ordinal(i + 1)} entry of ${source.name} is not a string`);
    }
  });
  return checkUrls(value as string[], source.name);
};

const SWITCH_VALUES: Readonly<Record<string, boolean>> = {
  "1": true,
  true: true,
  yes: true,
  on: true,
  "0": false,
  false: false,
  no: false,
  off: false,
};

/** On or off: a flag's presence, 1/0 (or true, yes, on…) in the environment, a JSON boolean. */
export const onOff: SettingParser<boolean> = (value, source) => {
  if (source.from === "flag") return value === true;
  if (source.from === "file") {
    if (typeof value !== "boolean") throw new UsageError(`${source.name} must be true or false`);
    return value;
  }
  const on = SWITCH_VALUES[String(value).trim().toLowerCase()];
  if (on === undefined) throw new UsageError(`${source.name} must be 1 or 0`);
  return on;
};

/** A positive number of seconds, as milliseconds. */
export const positiveSeconds: SettingParser<number> = (value, source) => {
  const seconds = typeof value === "number" ? value : Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new UsageError(`${source.name} must be a positive number of seconds`);
  }
  return Math.round(seconds * 1000);
};

/** Lamports: a whole number from 1. */
export const lamports: SettingParser<bigint> = (value, source) =>
  BigInt(wholeNumber(Number.MAX_SAFE_INTEGER)(value, source));

/** An amount in wei: a whole number (a JSON number only up to 2^53, a string beyond). */
export const wei: SettingParser<bigint> = (value, source) => {
  const digits = typeof value === "number" && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof digits !== "string" || !/^[0-9]{1,78}$/.test(digits.trim())) {
    throw new UsageError(`${source.name} must be a whole number of wei, such as 1000000000000000`);
  }
  return BigInt(digits.trim());
};

/** A list: comma-separated text (a repeatable flag's values joined), or a JSON array. */
function listOf<T>(
  [plural, one]: [string, string],
  check: (item: unknown) => item is string,
  as: (item: string) => T,
): SettingParser<T[]> {
  return (value, source) => {
    const items = Array.isArray(value)
      ? value
      : typeof value === "string"
        ? value
            .split(",")
            .map((item) => item.trim())
            .filter(Boolean)
        : undefined;
    if (!items) throw new UsageError(`${source.name} must be a list of ${plural}`);
    return items.map((item, i) => {
      if (!check(item)) {
        throw new UsageError(`the ${ordinal(i + 1)} entry of ${source.name} is not ${one}`);
      }
      return as(item);
    });
  };
}

export const addresses: SettingParser<Address[]> = listOf(
  ["addresses", "an address"],
  (item): item is string => typeof item === "string" && isAddress(item, { strict: false }),
  (item) => getAddress(item),
);

/** A PostgreSQL connection URL; empty: none (the journal file). */
export const postgresUrl: SettingParser<string | undefined> = (value, source) => {
  if (value === "") return undefined;
  if (typeof value !== "string" || !/^postgres(ql)?:\/\//.test(value)) {
    throw new UsageError(
      `${source.name} must be a PostgreSQL URL (postgres://user@host:5432/database); the journal file is the default without it`,
    );
  }
  return value;
};

/** An ERC-8021 builder code: 1 to 32 of a-z, 0-9 and "_" (refused at start otherwise). */
export const builderCode: SettingParser<string> = (value, source) => {
  const text = typeof value === "string" ? value.trim() : "";
  if (!/^[a-z0-9_]{1,32}$/.test(text)) {
    throw new UsageError(
      `${source.name} must be a builder code: 1 to 32 lowercase letters, digits or "_" (ERC-8021), such as my_facilitator`,
    );
  }
  return text;
};

export const solanaAddresses: SettingParser<string[]> = listOf(
  ["Solana addresses", "a Solana address"],
  isSolanaAddress,
  (item) => item,
);
