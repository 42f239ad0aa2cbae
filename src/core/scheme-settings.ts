/** A setting row (flag, env, config key, parser, help) apart from the CLI, for schemes too. */

/** Where a value came from. */
export interface SettingSource {
  /** How messages name it: "--rpc-url", "FACILITATOR_RPC_URL", "rpcUrls in /etc/f.json". */
  readonly name: string;
  readonly from: "flag" | "env" | "file";
  /** A path as the source means it: the config file's are relative to its own directory. */
  readonly resolvePath: (file: string) => string;
}

/** Reads a flag's or an environment variable's text, or a config file's JSON value. */
export type SettingParser<T> = (value: unknown, source: SettingSource) => T;

/** A value no parser takes: the shell reports it as a usage error naming its source. */
export class SettingError extends Error {
  override readonly name = "SettingError";
}

interface Described {
  /** What it is: the flag's help line, which adds the default and the environment variable. */
  readonly help: string;
  /** The default as people read it ("60", "per network, see doctor"), when there is one to say. */
  readonly shownDefault?: string;
}

/** One value: the first source that gives one wins. */
export interface ValueRow<T = unknown, D = T | undefined> extends Described {
  readonly kind: "value";
  /** commander's flag: "--rpc-url <url>"; without a <value>, a switch. */
  readonly flag?: string;
  /** A flag given again adds to the list (its values are read as one comma-separated text). */
  readonly repeatable?: boolean;
  readonly env?: string;
  /** Its key in the JSON config file. */
  readonly key?: string;
  readonly parse: SettingParser<T>;
  readonly default?: (env: NodeJS.ProcessEnv) => D;
}

/** A key, read only when needed and never printed: flag's file, env key, env file, config. */
export interface KeyRow extends Described {
  readonly kind: "key";
  /** A file holding the key (keys are never a flag's value). */
  readonly flag: string;
  /** The key itself. */
  readonly env: string;
  /** A file holding the key. */
  readonly envFile?: string;
  /** A file holding the key, relative to the config file. */
  readonly key?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: a table of rows of every value type
export type SchemeRow = ValueRow<any, any> | KeyRow;

/** A number from a JSON number or a text; an empty text is none (Number("") would be 0). */
function numberOf(value: unknown): number {
  if (typeof value === "number") return value;
  const text = String(value).trim();
  return text === "" ? Number.NaN : Number(text);
}

/** Seconds from `min` to `max` (`max` undefined: no upper bound), as milliseconds. */
export function secondsFrom(
  min: number,
  max: number | undefined,
  say = max === undefined
    ? "must be a number of seconds"
    : `must be a number of seconds from ${min} to ${max}`,
): SettingParser<number> {
  return (value, source) => {
    const seconds = numberOf(value);
    if (!Number.isFinite(seconds) || seconds < min || (max !== undefined && seconds > max)) {
      throw new SettingError(`${source.name} ${say}`);
    }
    return Math.round(seconds * 1000);
  };
}

/** A whole number from `min` (1 unless said) to `max`. */
export function wholeNumber(max: number, min = 1): SettingParser<number> {
  return (value, source) => {
    const n = numberOf(value);
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new SettingError(`${source.name} must be a whole number from ${min} to ${max}`);
    }
    return n;
  };
}
