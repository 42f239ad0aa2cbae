/** The JSON config file: size-limited, checked key by key, paths relative to its directory. */
import path from "node:path";
import { isObject } from "../../protocol/words.js";
import { readSmallFile } from "../io/bounded-read.js";
import { UsageError } from "../io/errors.js";
import type { ConfigValues } from "./setting-resolver.js";

/** Edit distance, to suggest the key someone meant. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] as number;
      const cost = a[i - 1]?.toLowerCase() === b[j - 1]?.toLowerCase() ? 0 : 1;
      row[j] = Math.min(above + 1, (row[j - 1] as number) + 1, diagonal + cost);
      diagonal = above;
    }
  }
  return row[b.length] as number;
}

/** The config file `file` names (none: an empty one), its keys checked against `keys`. */
export function readConfigFile(
  file: string | undefined,
  env: NodeJS.ProcessEnv,
  keys: readonly string[],
): ConfigValues {
  if (!file) {
    return { values: {}, where: (key) => `${key} in the config file`, resolve: (p) => p };
  }
  const text = readSmallFile(file, `config file ${file}`, env);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the start of the text: never echo a file that may hold a key.
    throw new UsageError(`config file ${file} is not valid: not JSON`);
  }
  if (!isObject(parsed)) {
    throw new UsageError(`config file ${file} is not valid: expected a JSON object`);
  }
  for (const key of Object.keys(parsed)) {
    if (key === "$schema" || keys.includes(key)) continue;
    const near = keys.filter((known) => distance(key, known) <= 3);
    const shown = JSON.stringify(key.slice(0, 60));
    throw new UsageError(
      `config file ${file}: unknown key ${shown}${near.length > 0 ? ` (did you mean ${near.join(" or ")}?)` : ""}; the keys are ${keys.join(", ")}`,
    );
  }
  const dir = path.dirname(path.resolve(file));
  return {
    values: parsed as Record<string, unknown>,
    where: (key) => `${key} in ${file}`,
    resolve: (p) => path.resolve(dir, p),
  };
}
