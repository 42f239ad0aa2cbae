/** A settings.ts row (a value, one per network, or a key), and how messages and help name it. */
import type { KeyRow, ValueRow } from "../../core/scheme-settings.js";

/** Per network: layered config file, then environment, then flag; every-network replaces below. */
export type PerNetworkSetting<T = unknown> = Omit<ValueRow<T>, "kind" | "default"> & {
  readonly kind: "per network";
};

// biome-ignore lint/suspicious/noExplicitAny: a table of rows of every value type
type Any = any;
export type Setting = ValueRow<Any, Any> | PerNetworkSetting<Any> | KeyRow;

// Each row keeps its own type (a row with a flag is known to have one), checked against its kind.
export function value<const R extends Omit<ValueRow<Any, Any>, "kind">>(row: R) {
  return { kind: "value" as const, ...row };
}

export function perNetwork<const R extends Omit<PerNetworkSetting<Any>, "kind">>(row: R) {
  return { kind: "per network" as const, ...row };
}

export function key<const R extends Omit<KeyRow, "kind">>(row: R) {
  return { kind: "key" as const, ...row };
}

/** The flag's name alone: "--rpc-url <url>" is "--rpc-url". */
export function flagName(flag: string): string {
  return flag.split(" ")[0] as string;
}

/** Where people set it, for messages: "--rpc-url, FACILITATOR_RPC_URL or rpcUrls in the config file". */
export function waysToSet(row: Setting): string {
  const ways = [
    ...(row.flag ? [flagName(row.flag)] : []),
    ...(row.env ? [row.env] : []),
    ...(row.key ? [`${row.key} in the config file`] : []),
  ];
  const last = ways.pop() ?? "";
  return ways.length > 0 ? `${ways.join(", ")} or ${last}` : last;
}

/** The help line of a setting's flag: what it is, its default, and its environment variable. */
export function helpLine(row: Setting): string {
  const notes: string[] = [];
  if (row.shownDefault !== undefined) notes.push(`default ${row.shownDefault}`);
  if (row.kind === "key") {
    notes.push(`or env ${row.env}${row.envFile ? ` / ${row.envFile}` : ""}`);
  } else if (row.env) {
    notes.push(`env ${row.env}${row.flag && !row.flag.includes("<") ? "=1" : ""}`);
  }
  return notes.length > 0 ? `${row.help} (${notes.join("; ")})` : row.help;
}
