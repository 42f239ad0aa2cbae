/**
 * One table of settings (src/cli/settings/settings.ts) behind the flags, the environment, the config file,
 * the help lines and the docs: docs/configuration.md's table has a row for each setting, with the
 * same flag, environment variables and config file key and the same default, and no row for a
 * setting the table does not have; every command's help line for a setting's flag is the table's;
 * no other help line names an environment variable; and the defaults the help lines say are the
 * defaults the resolver gives.
 */
import type { Command } from "commander";
import { describe, expect, test } from "vitest";
import { devnetCommand } from "../src/cli/commands/devnet/devnet-command.js";
import { doctorCommand } from "../src/cli/commands/doctor/doctor-command.js";
import { payCommand } from "../src/cli/commands/pay/pay-command.js";
import { settleCommand, verifyCommand } from "../src/cli/commands/payment/payment-commands.js";
import { reconcileCommand } from "../src/cli/commands/reconcile/reconcile-command.js";
import { serveCommand } from "../src/cli/commands/serve/serve-command.js";
import { statusCommand } from "../src/cli/commands/status/status-command.js";
import { flagAttribute, resolveSetting } from "../src/cli/settings/setting-resolver.js";
import { flagName, helpLine, type Setting } from "../src/cli/settings/setting-rows.js";
import { SETTINGS } from "../src/cli/settings/settings.js";
import { readDoc, section, tableRows } from "./helpers/markdown.js";

const COMMANDS: readonly Command[] = [
  verifyCommand,
  settleCommand,
  payCommand,
  serveCommand,
  devnetCommand,
  doctorCommand,
  reconcileCommand,
  statusCommand,
];

const ROWS = Object.entries(SETTINGS) as [string, Setting][];

/** What names a setting: its flag, its environment variables and its config file key. */
interface Names {
  readonly flags: readonly string[];
  readonly envs: readonly string[];
  readonly keys: readonly string[];
}

function namesOf(row: Setting): Names {
  const envs = row.kind === "key" ? [row.env, ...(row.envFile ? [row.envFile] : [])] : [];
  if (row.kind !== "key" && row.env) envs.push(row.env);
  return {
    flags: row.flag ? [flagName(row.flag)] : [],
    envs: envs.sort(),
    keys: row.key ? [row.key] : [],
  };
}

const inCode = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] as string);

interface DocRow extends Names {
  readonly text: string;
}

/** docs/configuration.md's table of settings: each row's flags, variables, keys and its text. */
function documentedRows(): DocRow[] {
  const page = readDoc("docs/configuration.md");
  const table = section(page, "# Configuration").split("\n## ")[0] ?? "";
  const [header, ...rows] = tableRows(table);
  expect(header).toEqual(["setting", "flag", "environment", "config file key"]);
  return rows.map(([setting = "", flag = "", env = "", key = ""]) => ({
    flags: [...new Set(inCode(flag).flatMap((code) => code.match(/^--[a-z0-9-]+/) ?? []))],
    envs: inCode(env)
      .flatMap((code) => code.match(/^FACILITATOR_[A-Z0-9_]+/) ?? [])
      .sort(),
    keys: inCode(key).filter((code) => /^[a-z][A-Za-z0-9]*$/.test(code)),
    text: [setting, flag, env, key].join(" | ").replace(/`/g, ""),
  }));
}

const shares = (a: Names, b: Names) =>
  a.flags.some((f) => b.flags.includes(f)) ||
  a.envs.some((e) => b.envs.includes(e)) ||
  a.keys.some((k) => b.keys.includes(k));

describe("docs/configuration.md's table is settings.ts's", () => {
  const documented = documentedRows();

  test.each(ROWS)("%s: one row, with its flag, environment variables and config key", (_, row) => {
    const names = namesOf(row);
    const found = documented.filter((doc) => shares(doc, names));
    expect(found, "rows of docs/configuration.md naming it").toHaveLength(1);
    const [doc] = found as [DocRow];
    expect({ flags: doc.flags, envs: doc.envs, keys: doc.keys }).toEqual(names);
    if (row.shownDefault !== undefined) {
      // The default as far as its first clause: "per network, see doctor" is "per network".
      const shown = row.shownDefault.split(/[,;]/)[0] as string;
      expect(doc.text, "the docs say the default --help says").toContain(`default ${shown}`);
    }
  });

  test("every row of the docs' table is a setting of settings.ts", () => {
    const unknown = documented.filter((doc) => !ROWS.some(([, row]) => shares(doc, namesOf(row))));
    expect(unknown.map((doc) => doc.text)).toEqual([]);
  });
});

describe("help lines come from the table", () => {
  const byFlag = new Map(
    ROWS.flatMap(([, row]) => (row.flag ? [[flagName(row.flag), row] as const] : [])),
  );

  test.each(COMMANDS.map((command) => [command.name(), command] as const))(
    "facilitator %s: a setting's flag has the table's help line; no other names a variable",
    (_, command) => {
      for (const option of command.options) {
        const row = option.long ? byFlag.get(option.long) : undefined;
        if (row) {
          expect(option.flags, option.long).toBe(row.flag);
          expect(option.description, option.long).toBe(helpLine(row));
        } else {
          expect(option.description, `${option.long} is not in settings.ts`).not.toMatch(
            /FACILITATOR_/,
          );
        }
      }
    },
  );

  test("every setting with a flag is some command's", () => {
    const offered = new Set(COMMANDS.flatMap((command) => command.options.map((o) => o.long)));
    const missing = [...byFlag.keys()].filter((flag) => !offered.has(flag));
    expect(missing).toEqual([]);
  });
});

describe("the defaults the help says are the resolver's", () => {
  const numeric = ROWS.filter(
    ([, row]) =>
      row.kind === "value" &&
      row.default !== undefined &&
      (row.env !== undefined || row.flag !== undefined) &&
      /^[0-9.]+(;|$)/.test(row.shownDefault ?? ""),
  );

  test("there are such settings", () => {
    expect(numeric.map(([name]) => name)).toContain("confirmTimeout");
  });

  test.each(numeric)("%s", (_, row) => {
    if (row.kind !== "value") throw new Error("filtered above");
    const shown = (row.shownDefault as string).split(";")[0] as string;
    const given = row.env
      ? { env: { [row.env]: shown } }
      : { flags: { [flagAttribute(row.flag as string)]: shown }, env: {} };
    expect(resolveSetting(row, given)).toEqual(resolveSetting(row, { env: {} }));
  });
});
