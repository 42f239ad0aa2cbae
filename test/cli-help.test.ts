/**
 * `--help` and the docs agree, and every help fits the terminal: the flags each command's --help
 * lists are the flags docs/cli.md gives it (and docs/serve.md gives serve), both ways; every help
 * fits 80 columns when stdout is no terminal and the terminal's width when it is one, breaking
 * lines only between words; status lists no flag only settling commands use; the README's command
 * table has every command; and the two --amount flags say which units they take.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { readDoc, section } from "./helpers/markdown.js";
import { runCli } from "./helpers/run-cli.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = path.join(ROOT, "bin", "facilitator.js");
const COMMANDS = [
  "verify",
  "settle",
  "pay",
  "serve",
  "devnet",
  "doctor",
  "reconcile",
  "status",
] as const;

interface Flag {
  readonly long: string;
  readonly short?: string | undefined;
}

/** The flags in a help's Options section (lines at the two-space margin), but --help itself. */
function helpFlags(help: string): Flag[] {
  const options = help.split(/\nOptions:\n/)[1]?.split(/\n\n/)[0] ?? "";
  const flags: Flag[] = [];
  for (const line of options.split("\n")) {
    const term = /^ {2}(?:(-[a-zA-Z]), )?(--[a-z0-9][a-z0-9-]*)/.exec(line);
    if (term && term[2] !== "--help") flags.push({ long: term[2] as string, short: term[1] });
  }
  return flags;
}

const flagsIn = (text: string) =>
  [...text.matchAll(/(?<![\w-])(--?[a-z][a-z0-9-]*)/g)].map((m) => m[1] as string);

/**
 * docs/cli.md's "Commands and flags" block: each `facilitator COMMAND` line and the indented lines
 * under it, with the groups (`CHAIN FLAGS` and the like, defined below the commands) spelt out.
 */
function documentedFlags(): Map<string, Set<string>> {
  const block =
    /```\n([\s\S]*?)\n```/.exec(section(readDoc("docs/cli.md"), "## Commands and flags"))?.[1] ??
    "";
  const entries = new Map<string, string>();
  let current = "";
  for (const line of block.split("\n")) {
    const command = /^facilitator (\S+)(.*)$/.exec(line);
    const group = /^([A-Z][A-Z ]*FLAGS)\s+(.*)$/.exec(line);
    if (command) current = command[1] as string;
    else if (group) current = group[1] as string;
    else if (!/^\s/.test(line)) continue;
    const text = command ? command[2] : group ? group[2] : line;
    entries.set(current, `${entries.get(current) ?? ""} ${text}`);
  }
  const documented = new Map<string, Set<string>>();
  for (const [name, text] of entries) {
    if (/^[A-Z]/.test(name)) continue;
    const groups = [...text.matchAll(/\b([A-Z][A-Z ]*?FLAGS)\b/g)].map((m) => m[1] as string);
    for (const g of groups)
      expect(entries.has(g), `docs/cli.md uses ${g} but defines it nowhere`).toBe(true);
    const expanded = [text, ...groups.map((g) => entries.get(g) ?? "")].join(" ");
    documented.set(name, new Set(flagsIn(expanded.replace(/\b[A-Z][A-Z ]*?FLAGS\b/g, ""))));
  }
  return documented;
}

/** What is listed in one place and missing from the other, both ways. */
function compare(listed: readonly Flag[], documented: ReadonlySet<string>) {
  const undocumented = listed
    .filter((f) => !documented.has(f.long) && !(f.short && documented.has(f.short)))
    .map((f) => f.long);
  const known = new Set(listed.flatMap((f) => [f.long, ...(f.short ? [f.short] : [])]));
  const unlisted = [...documented].filter((flag) => !known.has(flag));
  return { undocumented, unlisted };
}

const helps = new Map<string, string>();
async function helpOf(command: string): Promise<string> {
  const known = helps.get(command);
  if (known !== undefined) return known;
  const run = await runCli(command ? [command, "--help"] : ["--help"]);
  expect(run.code, run.stderr).toBe(0);
  helps.set(command, run.stdout);
  return run.stdout;
}

/** --help through a pseudo-terminal of `columns` columns (script(1)), as a person's shell runs it. */
function helpOnTerminal(command: string, columns: number): Promise<string> {
  const inner = `stty cols ${columns} rows 24; "${process.execPath}" "${BIN}" ${command} --help`;
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qec", inner, "/dev/null"], {
      cwd: ROOT,
      env: { ...process.env, FORCE_COLOR: "0", SHELL: "/bin/bash" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let text = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      text += chunk;
    });
    child.once("error", reject);
    child.once("exit", () => resolve(text.replace(/\r/g, "")));
  });
}

const tooLong = (text: string, columns: number) =>
  text.split("\n").filter((line) => [...line].length > columns);
const words = (text: string) => text.split(/\s+/).filter(Boolean);

describe("--help and docs/cli.md list the same flags", () => {
  const documented = documentedFlags();

  test("docs/cli.md has every command, and no other", () => {
    expect([...documented.keys()].sort()).toEqual([...COMMANDS].sort());
  });

  test.each(COMMANDS)("facilitator %s", async (command) => {
    const listed = helpFlags(await helpOf(command));
    expect(listed.length).toBeGreaterThan(0);
    const { undocumented, unlisted } = compare(listed, documented.get(command) ?? new Set());
    expect(undocumented, `${command} --help lists flags docs/cli.md does not give it`).toEqual([]);
    expect(unlisted, `docs/cli.md gives ${command} flags its --help does not list`).toEqual([]);
  });

  test("docs/serve.md's synopsis is serve's --help", async () => {
    const synopsis =
      /```\n(facilitator serve [\s\S]*?)\n```/.exec(readDoc("docs/serve.md"))?.[1] ?? "";
    const { undocumented, unlisted } = compare(
      helpFlags(await helpOf("serve")),
      new Set(flagsIn(synopsis)),
    );
    expect({ undocumented, unlisted }).toEqual({ undocumented: [], unlisted: [] });
  });

  test("status lists none of the flags only settling commands use", async () => {
    const status = helpFlags(await helpOf("status")).map((f) => f.long);
    expect(status.sort()).toEqual(
      [
        "--config",
        "--id",
        "--journal",
        "--public-rpcs",
        "--quiet",
        "--rpc-batch-limit",
        "--rpc-url",
        "--store",
        "--svm-private-key-file",
        "--transaction",
      ].sort(),
    );
  });

  test("the README's command table has every command", async () => {
    const table = section(readDoc("README.md"), "## The command line at a glance");
    const inTable = [...table.matchAll(/^\| `facilitator ([a-z]+)`/gm)].map((m) => m[1]);
    const commands = (await helpOf("")).split(/\nCommands:\n/)[1] ?? "";
    const offered = [...commands.matchAll(/^ {2}([a-z]+)\b/gm)]
      .map((m) => m[1])
      .filter((name) => name !== "help");
    expect(offered.sort()).toEqual([...COMMANDS].sort());
    expect(inTable.sort()).toEqual([...COMMANDS].sort());
  });

  test("settle --amount says atomic units and pay --amount token units, each naming the other", async () => {
    const settle = await helpOf("settle");
    const pay = await helpOf("pay");
    expect(settle).toContain("--amount <atomic-units>");
    expect(pay).toContain("--amount <token-units>");
    expect(settle.replace(/\s+/g, " ")).toContain("pay --amount is in token units");
    expect(pay.replace(/\s+/g, " ")).toContain("settle --amount takes atomic units");
  });
});

describe("every --help fits the terminal", () => {
  test.each(["", ...COMMANDS])(
    "facilitator %s --help: 80 columns without a terminal, the terminal's width on one, words whole",
    async (command) => {
      const piped = await helpOf(command);
      expect(tooLong(piped, 80), "lines over 80 columns").toEqual([]);
      const [narrow, wide] = await Promise.all([
        helpOnTerminal(command, 60),
        helpOnTerminal(command, 132),
      ]);
      // At 60 columns only the examples to copy, kept as written, may be longer.
      const asWritten = new Set(piped.split("\n").filter((line) => line.startsWith("  ")));
      expect(
        tooLong(narrow, 60).filter((line) => !asWritten.has(line)),
        "lines over 60 columns on a 60-column terminal",
      ).toEqual([]);
      expect(tooLong(wide, 132), "lines over 132 columns").toEqual([]);
      expect(tooLong(wide, 80).length, "a wide terminal's width is used").toBeGreaterThan(0);
      // The same words in the same order, however wrapped: no word was broken.
      expect(words(narrow)).toEqual(words(piped));
      expect(words(wide)).toEqual(words(piped));
    },
    20_000,
  );
});
