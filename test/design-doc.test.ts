/**
 * docs/design.md is true of the tree. Every path it names exists (`src/…` or short, `core/…`, in
 * backticks, and the entries of its Layout); its Layout has every folder of src/ and every folder
 * under each; its CLI synopsis has exactly the commands src/cli/main.ts registers; every import
 * rule its table lists holds for the imports of src/ (each rule of .dependency-cruiser.cjs, which
 * the table must list, and the family rules only this test checks); every function it names as
 * `name()` is declared in a file its section names; and its error codes are a link to errors.md,
 * not a copy. test/design-rules.test.ts holds its structural statements. No chain, no process: it
 * reads files.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { Command } from "commander";
import ts from "typescript";
import { describe, expect, test, vi } from "vitest";
import { main } from "../src/cli/main.js";
import { EVM_SCHEMES } from "../src/evm/schemes.js";
import { ERRORS } from "../src/protocol/errors.js";
import { REPO, readDoc, section, tableRows } from "./helpers/markdown.js";

const DOC = readDoc("docs/design.md");
const SRC = path.join(REPO, "src");
const sorted = (values: Iterable<string>) => [...values].sort();
/** A path relative to the repository, with forward slashes. */
const rel = (absolute: string) => path.relative(REPO, absolute).split(path.sep).join("/");

/** Every file under `dir`, as absolute paths. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(full) : [full];
  });
}

const SRC_TOP = readdirSync(SRC);
const SRC_FILES = filesUnder(SRC).filter((file) => file.endsWith(".ts"));

/**
 * Where a backticked name points, if it is a path the doc names: `src/…`, or short from src/
 * (`core/store.ts`, `evm/chain/`, `facilitator.ts`), or `test/…`, `bin/…` and
 * `.dependency-cruiser.cjs` from the repository's root. Undefined for anything else.
 */
function pathOf(token: string): string | undefined {
  if (/^(?:test|bin)\/[\w./-]*$/.test(token) || token === ".dependency-cruiser.cjs") {
    return path.join(REPO, token);
  }
  const short = token.replace(/^src\//, "");
  const [first = ""] = short.split("/");
  const isSrcPath =
    /^[\w./-]+$/.test(short) &&
    SRC_TOP.includes(first) &&
    (short.includes("/") || short.endsWith(".ts"));
  return isSrcPath ? path.join(SRC, short) : undefined;
}

/** The spans in backticks of a text, outside fenced blocks. */
function backticked(text: string): string[] {
  const prose = text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "");
  return [...prose.matchAll(/`([^`\n]+)`/g)].map((match) => match[1] as string);
}

/** The lines of the first fenced block in a section. */
function fencedLines(text: string): string[] {
  return (/```[^\n]*\n([\s\S]*?)\n```/.exec(text)?.[1] ?? "").split("\n");
}

/** The Layout block's entries: each path at the start of a line, with its description. */
function layoutEntries(): { entry: string; description: string }[] {
  const entries: { entry: string; description: string }[] = [];
  for (const line of fencedLines(section(DOC, "### Layout"))) {
    const head = /^(\S+)\s*(.*)$/.exec(line);
    if (head) entries.push({ entry: head[1] as string, description: head[2] as string });
    else if (entries.length > 0) {
      const last = entries[entries.length - 1] as { entry: string; description: string };
      last.description += ` ${line.trim()}`;
    }
  }
  return entries;
}

describe("the paths docs/design.md names", () => {
  test("exist", () => {
    const named = backticked(DOC).filter((token) => pathOf(token) !== undefined);
    expect(named.length).toBeGreaterThan(50);
    const missing = named.filter((token) => !existsSync(pathOf(token) as string));
    expect(missing, "docs/design.md names these, and the tree has no such path").toEqual([]);
  });

  test("the Layout's entries exist, and so do the files each one names", () => {
    const entries = layoutEntries();
    expect(entries.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const { entry, description } of entries) {
      const where = path.join(REPO, entry);
      if (!existsSync(where)) {
        missing.push(entry);
        continue;
      }
      if (!statSync(where).isDirectory()) continue;
      // File names in the description (NAME-command.ts and the like are placeholders); a pattern
      // (ledger*.ts) must match one of the folder's files.
      for (const [name] of description.matchAll(/[\w*.-]+\.ts\b/g)) {
        if (/[A-Z]/.test(name)) continue;
        const pattern = new RegExp(`^${name.replace(/\./g, "\\.").replace(/\*/g, ".*")}$`);
        if (!readdirSync(where).some((file) => pattern.test(file))) missing.push(`${entry}${name}`);
      }
    }
    expect(missing, "the Layout names these, and the tree has no such path").toEqual([]);
  });

  test("the Layout has every folder of src/ and every folder under each, and src/'s files", () => {
    const listed = new Set(layoutEntries().map(({ entry }) => entry));
    const expected: string[] = [];
    for (const top of SRC_TOP) {
      const full = path.join(SRC, top);
      if (!statSync(full).isDirectory()) {
        expected.push(`src/${top}`);
        continue;
      }
      expected.push(`src/${top}/`);
      for (const sub of readdirSync(full)) {
        if (statSync(path.join(full, sub)).isDirectory()) expected.push(`src/${top}/${sub}/`);
      }
    }
    expect(expected).toContain("src/evm/chain/");
    expect(expected).toContain("src/svm/exact/");
    expect(expected.filter((entry) => !listed.has(entry))).toEqual([]);
  });
});

describe("the CLI synopsis", () => {
  test("names exactly the commands src/cli/main.ts registers", async () => {
    // main() builds the program and hands it argv; stopping it there leaves its commands to read.
    let registered: string[] = [];
    const parse = vi.spyOn(Command.prototype, "parseAsync").mockImplementation(async function (
      this: Command,
    ) {
      registered = this.commands.map((command) => command.name());
      return this;
    });
    try {
      await main(["node", "facilitator", "--help"]);
    } finally {
      parse.mockRestore();
    }
    const documented = fencedLines(section(DOC, "## 4. The CLI")).flatMap((line) => {
      const command = /^facilitator (\S+)/.exec(line)?.[1];
      return command ? [command] : [];
    });
    expect(registered.length).toBeGreaterThan(0);
    expect(registered).toContain("status");
    expect(registered).toContain("reconcile");
    expect(sorted(documented)).toEqual(sorted(registered));
  });
});

// The imports of src/: every file's, resolved to the file they name (relative ones) or the
// package (bare ones). Type-only and dynamic imports count, as dependency-cruiser counts them.
interface Imports {
  readonly files: Map<string, string[]>;
  readonly packages: Map<string, string[]>;
}

function scanImports(): Imports {
  const files = new Map<string, string[]>();
  const packages = new Map<string, string[]>();
  for (const file of SRC_FILES) {
    const found = ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles;
    const local: string[] = [];
    const bare: string[] = [];
    for (const { fileName } of found) {
      if (fileName.startsWith(".")) {
        const target = path.join(path.dirname(file), fileName).replace(/\.js$/, ".ts");
        const resolved = [target, path.join(target, "index.ts")].find(
          (candidate) => existsSync(candidate) && statSync(candidate).isFile(),
        );
        local.push(rel(resolved ?? target));
      } else if (!fileName.startsWith("node:")) {
        const parts = fileName.split("/");
        bare.push(fileName.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string));
      }
    }
    files.set(rel(file), local);
    packages.set(rel(file), bare);
  }
  return { files, packages };
}

const IMPORTS = scanImports();

/** Imports `from` → `to` that break a rule; a package is `node_modules/<name>/`, as cruised. */
function edgesWhere(breaks: (from: string, to: string) => boolean): string[] {
  return [...IMPORTS.files].flatMap(([from, files]) =>
    [...files, ...(IMPORTS.packages.get(from) ?? []).map((name) => `node_modules/${name}/`)]
      .filter((to) => breaks(from, to))
      .map((to) => `${from} → ${to}`),
  );
}

/** Every cycle of imports (a strongly connected set of two or more files, or a self-import). */
function cycles(): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[] = [];
  let next = 0;
  const visit = (file: string) => {
    index.set(file, next);
    low.set(file, next++);
    stack.push(file);
    onStack.add(file);
    for (const to of IMPORTS.files.get(file) ?? []) {
      if (!IMPORTS.files.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(file, Math.min(low.get(file) as number, low.get(to) as number));
      } else if (onStack.has(to)) {
        low.set(file, Math.min(low.get(file) as number, index.get(to) as number));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const members: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      members.push(member);
    } while (member !== file);
    if (members.length > 1 || (IMPORTS.files.get(file) ?? []).includes(file)) {
      found.push(sorted(members).join(" ↔ "));
    }
  };
  for (const file of IMPORTS.files.keys()) if (!index.has(file)) visit(file);
  return found;
}

const packageJson = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

interface CruiserRule {
  readonly name: string;
  readonly from: { readonly path?: string; readonly pathNot?: string };
  readonly to: {
    readonly path?: string;
    readonly circular?: boolean;
    readonly pathNot?: string;
    readonly dependencyTypes?: string[];
  };
}

const cruiser = createRequire(import.meta.url)("../.dependency-cruiser.cjs") as {
  forbidden: CruiserRule[];
};

/** What breaks a rule of .dependency-cruiser.cjs, or undefined for a rule this test cannot read. */
function breachesOf(rule: CruiserRule): string[] | undefined {
  if (rule.to.circular) return cycles();
  if (rule.to.dependencyTypes?.includes("npm-dev")) {
    const shipped = new Set(Object.keys(packageJson.dependencies ?? {}));
    const dev = new Set(Object.keys(packageJson.devDependencies ?? {}));
    const from = new RegExp(rule.from.path ?? "");
    // The devDependencies the build bundles, which the rule lets src/ import.
    const bundled = new RegExp(rule.to.pathNot ?? "(?!)");
    const breaches = (name: string) =>
      dev.has(name) && !shipped.has(name) && !bundled.test(`node_modules/${name}/`);
    return [...IMPORTS.packages]
      .filter(([file]) => from.test(file))
      .flatMap(([file, names]) => names.filter(breaches).map((n) => `${file} → ${n}`));
  }
  if (rule.from.path !== undefined && rule.to.path !== undefined) {
    const [from, to] = [new RegExp(rule.from.path), new RegExp(rule.to.path)];
    const not = rule.from.pathNot === undefined ? undefined : new RegExp(rule.from.pathNot);
    const toNot = rule.to.pathNot ?? "(?!)"; // which may name from.path's groups: $1
    return edgesWhere((a, b) => {
      const groups = from.exec(a);
      if (groups === null || not?.test(a) || !to.test(b)) return false;
      return !new RegExp(toNot.replace(/\$(\d)/g, (_, i) => groups[Number(i)] ?? "")).test(b);
    });
  }
  return undefined;
}

/** The scheme folder a file of src/evm/ is in, if any. */
function schemeOf(file: string): string | undefined {
  const folder = /^src\/evm\/([^/]+)\//.exec(file)?.[1];
  return EVM_SCHEMES.some((scheme) => scheme.name === folder) ? folder : undefined;
}

/** The rules the doc states beyond .dependency-cruiser.cjs, checked here only. */
const FAMILY_RULES: Readonly<Record<string, () => string[]>> = {
  "chain-below-schemes": () =>
    edgesWhere(
      (from, to) => from.startsWith("src/evm/chain/") && /^src\/evm\/(?!chain\/)/.test(to),
    ),
  "exact-is-the-base": () =>
    edgesWhere((from, to) => {
      const [a, b] = [schemeOf(from), schemeOf(to)];
      if (a === undefined || b === undefined || a === b) return false;
      return !(b === "exact" && (a === "upto" || a === "batch-settlement"));
    }),
  "settling-needs-no-devnet": () =>
    edgesWhere(
      (from, to) =>
        /^src\/(evm|svm)\/(?!(client|devnet)\/)/.test(from) &&
        /^src\/(evm|svm)\/(client|devnet)\//.test(to),
    ),
};

describe("the import rules docs/design.md lists", () => {
  const listed = tableRows(section(DOC, "### Layers and imports")).flatMap(([first = ""]) => {
    const name = /^`([a-z0-9-]+)`$/.exec(first)?.[1];
    return name ? [name] : [];
  });

  test("are the rules of .dependency-cruiser.cjs and those this test adds, each once", () => {
    expect(cruiser.forbidden.length).toBeGreaterThan(0);
    const rules = [...cruiser.forbidden.map((rule) => rule.name), ...Object.keys(FAMILY_RULES)];
    expect(sorted(listed)).toEqual(sorted(rules));
  });

  test("the imports of src/ were read", () => {
    expect(IMPORTS.files.size).toBe(SRC_FILES.length);
    expect(IMPORTS.files.get("src/facilitator.ts")).toContain("src/core/facilitator.ts");
    // A dynamic import counts: the Solana family loads its scheme when a Solana payment comes.
    expect(IMPORTS.files.get("src/svm/family.ts")).toContain("src/svm/exact/index.ts");
  });

  test.each(cruiser.forbidden.map((rule) => [rule.name, rule] as const))(
    "%s holds",
    (_name, rule) => {
      const breaches = breachesOf(rule);
      expect(breaches, "a rule this test cannot read: teach breachesOf() its shape").toBeDefined();
      expect(breaches).toEqual([]);
    },
  );

  test.each(Object.entries(FAMILY_RULES))("%s holds", (_name, breaches) => {
    expect(breaches()).toEqual([]);
  });
});

describe("the functions docs/design.md names", () => {
  /** Sections of the doc, from one heading to the next, whatever their levels. */
  const sections = DOC.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "").split(/^(?=#{1,6} )/m);

  function declares(text: string, name: string): boolean {
    const modifiers = "(?:(?:export|async|static|readonly|public|private|protected|override)\\s+)*";
    return new RegExp(
      [
        `\\bfunction\\s*\\*?\\s*${name}\\b`,
        // A class or interface member, at the two-space indent of one.
        `^ {2}${modifiers}#?${name}\\??\\s*(?:<[^>\\n]*>)?\\(`,
        `^(?:export\\s+)?const\\s+${name}\\s*=`,
      ].join("|"),
      "m",
    ).test(text);
  }

  test("are declared in a file their section names (in src/ when it names none)", () => {
    const wrong: string[] = [];
    let named = 0;
    for (const text of sections) {
      const tokens = backticked(text);
      const names = tokens.flatMap((t) => /^([A-Za-z_$][\w$]*)\(\)$/.exec(t)?.[1] ?? []);
      const where = tokens
        .map((token) => pathOf(token))
        .filter((p): p is string => p !== undefined && existsSync(p) && p.startsWith(SRC))
        .flatMap((p) => (statSync(p).isDirectory() ? filesUnder(p) : [p]))
        .filter((file) => file.endsWith(".ts"));
      const files = where.length > 0 ? where : SRC_FILES;
      const texts = files.map((file) => readFileSync(file, "utf8"));
      for (const name of names) {
        named++;
        if (!texts.some((text) => declares(text, name))) {
          const heading = text.split("\n")[0];
          wrong.push(`${name}() (${heading}: declared in none of ${files.map(rel).join(", ")})`);
        }
      }
    }
    expect(named).toBeGreaterThan(20);
    expect(wrong).toEqual([]);
  });
});

describe("the error codes in docs/design.md", () => {
  test("are linked, not copied: §2 points at errors.md and holds no table of codes", () => {
    const codes = section(DOC, "## 2. Error codes");
    expect(codes).toContain("](errors.md)");
    expect(tableRows(codes)).toEqual([]);
    // errors.md's table is the one kept against the code (test/errors.test.ts).
    expect(Object.keys(ERRORS).length).toBeGreaterThan(30);
  });
});
