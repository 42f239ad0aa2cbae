/** How a setting is found: flag, else environment, else config key, else default; keys lazily. */
import { Option } from "commander";
import type { KeyRow, SettingParser, SettingSource, ValueRow } from "../../core/scheme-settings.js";
import { filePath, layered, type PerNetwork, perNetwork, usage } from "./setting-parsers.js";
import { flagName, type PerNetworkSetting } from "./setting-rows.js";

/** The config file as read (config.ts): its values, how messages name a key, its paths. */
export interface ConfigValues {
  readonly values: Readonly<Record<string, unknown>>;
  /** "rpcUrls in /path/config.json". */
  readonly where: (key: string) => string;
  /** A path in the file, relative to the file's own directory. */
  readonly resolve: (file: string) => string;
}

/** Where settings come from; a command without flags or a config file leaves them out. */
export interface SettingSources {
  readonly flags?: object | undefined;
  readonly env: NodeJS.ProcessEnv;
  readonly file?: ConfigValues | undefined;
}

/** The property commander keeps a flag's value under: "--rpc-url <url>" is rpcUrl. */
export function flagAttribute(flag: string): string {
  return new Option(flag).attributeName();
}

const asGiven = (p: string) => p;

/** What each source gives, the flag first, unread; a source that gives nothing is left out. */
export function givenFor(
  row: { readonly flag?: string; readonly env?: string; readonly key?: string },
  sources: SettingSources,
): { readonly value: unknown; readonly source: SettingSource }[] {
  const found: ReturnType<typeof givenFor> = [];
  if (row.flag && sources.flags) {
    const raw = (sources.flags as Readonly<Record<string, unknown>>)[flagAttribute(row.flag)];
    const value = Array.isArray(raw) ? (raw.length > 0 ? raw.join(",") : undefined) : raw;
    if (value !== undefined && value !== false) {
      found.push({
        value,
        source: { name: flagName(row.flag), from: "flag", resolvePath: asGiven },
      });
    }
  }
  const text = row.env ? sources.env[row.env]?.trim() : undefined;
  if (row.env && text) {
    found.push({ value: text, source: { name: row.env, from: "env", resolvePath: asGiven } });
  }
  const file = sources.file;
  if (row.key && file && file.values[row.key] !== undefined) {
    found.push({
      value: file.values[row.key],
      source: { name: file.where(row.key), from: "file", resolvePath: file.resolve },
    });
  }
  return found;
}

/** What a value setting resolves to: what its parser gives, or its default (none: undefined). */
export type ValueOf<R> =
  | (R extends { readonly parse: SettingParser<infer T> } ? T : never)
  | (R extends { readonly default: (env: NodeJS.ProcessEnv) => infer D } ? D : undefined);

/** The setting's value from the first source that gives one, else its default. */
export function resolveSetting<R extends ValueRow>(row: R, sources: SettingSources): ValueOf<R> {
  const [first] = givenFor(row, sources);
  if (first) return usage(row.parse)(first.value, first.source) as ValueOf<R>;
  return row.default?.(sources.env) as ValueOf<R>;
}

/** The setting's values, the config file's overlaid by the environment's, then by the flag's. */
export function resolvePerNetwork<T>(
  row: PerNetworkSetting<T>,
  sources: SettingSources,
): PerNetwork<T> {
  const layers = givenFor(row, sources).reverse();
  return layered(layers.map(({ value, source }) => perNetwork(value, source, usage(row.parse))));
}

/** How a kind of key is read: from the text of an environment variable, or from a file. */
export interface KeyReader<K> {
  readonly inline: (text: string, source: string) => K[];
  readonly inFile: (file: string, source: string, env: NodeJS.ProcessEnv) => K[];
}

/** A key setting's keys, read when called; a config file path of the wrong type is refused now. */
export function keyLoader<K>(row: KeyRow, sources: SettingSources, read: KeyReader<K>): () => K[] {
  const [flag] = givenFor({ flag: row.flag }, sources);
  const [inline] = givenFor({ env: row.env }, sources);
  const [named] = row.envFile ? givenFor({ env: row.envFile }, sources) : [];
  const [configured] = (row.key ? givenFor({ key: row.key }, sources) : []).map((given) => ({
    ...given,
    value: filePath(given.value, given.source),
  }));
  return () => {
    if (inline && !flag) return read.inline(String(inline.value), inline.source.name);
    const file = flag ?? named ?? configured;
    return file ? read.inFile(String(file.value), file.source.name, sources.env) : [];
  };
}
