/**
 * docs/design.md's structural statements, held against the code: the order the settle loop asks
 * its steps and the store in (run with steps of this test's own over a real journal), the two doors
 * a transaction leaves through and the licence they ask for, what a family, a scheme, a transfer
 * method and a settle's steps provide (read from their interfaces), what the store port offers,
 * the stack of layers the imports follow and what each import rule of its table says (against
 * .dependency-cruiser.cjs, which `npm run deps` enforces). A false edit of any of them fails here;
 * test/design-doc.test.ts checks the paths and names the doc uses.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import ts from "typescript";
import type { Hex } from "viem";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import {
  type LoopPorts,
  type MaySend,
  type SettleSteps,
  Success,
  settleInTurn,
} from "../src/core/settle-loop.js";
import type { WaitUntil } from "../src/protocol/schemas.js";
import { Journal } from "../src/store/journal.js";
import { REPO, readDoc, section, tableRows } from "./helpers/markdown.js";

const DOC = readDoc("docs/design.md");
const SRC = path.join(REPO, "src");
const sorted = (values: Iterable<string>) => [...values].sort();
/** The spans in backticks of a text. */
const ticked = (text: string) => [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] as string);

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(full) : [full];
  });
}
const SRC_FILES = filesUnder(SRC)
  .filter((file) => file.endsWith(".ts"))
  .map((file) => path.relative(SRC, file).split(path.sep).join("/"));
const source = (file: string) => readFileSync(path.join(SRC, file), "utf8");

describe("what the loop is asked, in order", () => {
  let dir: string;
  let journal: Journal;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "design-rules-"));
    journal = new Journal(path.join(dir, "journal.jsonl"));
  });
  afterEach(() => {
    journal.close();
    rmSync(dir, { recursive: true, force: true });
  });

  type Answer = { readonly ok: boolean };
  interface Scenario {
    readonly waitUntil: WaitUntil;
    readonly held?: true;
    readonly refuse?: true;
    readonly busy?: true;
  }
  /** Each line of the doc, by the words before its colon. */
  const SCENARIOS: Record<string, Scenario> = {
    "a settle": { waitUntil: "confirmed" },
    "one the store holds": { waitUntil: "confirmed", held: true },
    "a dry run": { waitUntil: "simulated" },
    "a dry run of one the store holds": { waitUntil: "simulated", held: true },
    "a refusal": { waitUntil: "confirmed", refuse: true },
    "while another holds the turn": { waitUntil: "confirmed", busy: true },
  };

  /** What the loop asked of the steps, the store and the record of answers, in order. */
  async function run(scenario: Scenario): Promise<string[]> {
    const key = "design:key";
    const asked: string[] = [];
    if (scenario.held) {
      await journal.recordSend(
        { key, network: "eip155:31337", signer: `0x${"11".repeat(20)}`, txNonce: 0 },
        `0x${"ab".repeat(32)}` as Hex,
        "0x02" as Hex,
      );
    }
    if (scenario.busy) await journal.claim(key);
    /** Notes that the loop asked for `what`, and answers `value`. */
    const noted = <T>(what: string, value: T): T => {
      asked.push(what);
      return value;
    };
    const ports: LoopPorts = {
      journal: {
        claim: (k) => noted("claim", journal.claim(k)),
        get: (k) => noted("get", journal.get(k)),
        release: (k) => noted("release", journal.release(k)),
      },
      answers: { answer: async () => noted("answer", true) },
    };
    const success = () => new Success<Answer>({ ok: true }, [key], { ok: false });
    const steps: SettleSteps<string, Answer> = {
      key,
      busy: () => noted("busy", { ok: false }),
      pickUp: async (_entry, _waitUntil, may: MaySend | undefined) => {
        asked.push("pickUp");
        // Without the licence (a dry run) nothing stands in the way: the settle goes on afresh.
        return may ? success() : undefined;
      },
      prepare: async () => {
        asked.push("prepare");
        return scenario.refuse
          ? { ok: false, result: { ok: false } }
          : { ok: true, value: "priced" };
      },
      simulate: async () => noted("simulate", { ok: true }),
      hold: async () => noted("hold", undefined),
      send: async () => noted("send", success()),
    };
    await settleInTurn(ports, steps, scenario.waitUntil);
    return asked;
  }

  const lines = [
    ...section(DOC, "### How a settle is made safe").matchAll(/^- ([^:\n]+): (`.*?)[;.]$/gm),
  ].filter(([, , calls]) => calls?.includes("→"));

  test("the doc states each case once", () => {
    expect(sorted(lines.map(([, label]) => label as string))).toEqual(
      sorted(Object.keys(SCENARIOS)),
    );
  });

  test.each(Object.entries(SCENARIOS))("%s", async (label, scenario) => {
    const line = lines.find(([, said]) => said === label);
    const stated = ticked(line?.[2] ?? "").map((name) => name.replace(/\(\)$/, ""));
    expect(stated.length).toBeGreaterThan(1);
    expect(await run(scenario)).toEqual(stated);
  });
});

describe("the two doors a transaction leaves through", () => {
  const paragraph = /\*\*Two doors\.\*\*([\s\S]*?)\n\n/.exec(DOC)?.[1] ?? "";
  const first = paragraph.slice(0, paragraph.indexOf("nowhere else"));
  /** The doc's doors: each file with the functions named before it. */
  const doors = new Map<string, string[]>();
  let names: string[] = [];
  for (const token of ticked(first)) {
    if (token.endsWith("()")) names.push(token.slice(0, -2));
    else if (token.endsWith(".ts")) {
      doors.set(token, names);
      names = [];
    }
  }
  // Sending methods of viem's clients and the Solana JSON-RPC's `sendTransaction`.
  const SENDS = /\.sendRawTransaction(Sync)?\(|\.sendTransaction\(|["']sendTransaction["']/;
  const SETTLING = (file: string) => !/^(evm|svm)\/(client|devnet)\//.test(file);

  test("the files that hand a transaction to a node are the doors the doc names", () => {
    expect(doors.size).toBeGreaterThan(1);
    const sending = SRC_FILES.filter(SETTLING).filter((file) => SENDS.test(source(file)));
    expect(sorted(sending)).toEqual(sorted(doors.keys()));
  });

  test("each door asks for the licence, and only the folder the doc names makes one", () => {
    const unlicensed: string[] = [];
    for (const [file, functions] of doors) {
      const tree = ts.createSourceFile(file, source(file), ts.ScriptTarget.Latest, true);
      for (const name of functions) {
        const declared = tree.statements.find(
          (s): s is ts.FunctionDeclaration => ts.isFunctionDeclaration(s) && s.name?.text === name,
        );
        const licensed = declared?.parameters.some((p) => p.type?.getText(tree) === "MaySend");
        if (!licensed) unlicensed.push(`${file}: ${name}()`);
      }
    }
    expect(unlicensed).toEqual([]);
    const maker = /which only `([^`]+)` makes/.exec(paragraph)?.[1] ?? "";
    expect(maker).not.toBe("");
    const makers = SRC_FILES.filter((file) => /\bMAY_SEND\b|as MaySend\b/.test(source(file)));
    expect(makers.length).toBeGreaterThan(0);
    expect(makers.filter((file) => !file.startsWith(maker))).toEqual([]);
  });
});

/** An interface's members: `name()` for a method, `name` for a property; optional ones apart. */
function membersOf(file: string, name: string): { required: string[]; optional: string[] } {
  const tree = ts.createSourceFile(file, source(file), ts.ScriptTarget.Latest, true);
  const declared = tree.statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name,
  );
  if (!declared) throw new Error(`${file} declares no interface ${name}`);
  const required: string[] = [];
  const optional: string[] = [];
  for (const member of declared.members) {
    if (!member.name || !(ts.isMethodSignature(member) || ts.isPropertySignature(member))) continue;
    const said = `${member.name.getText(tree)}${ts.isMethodSignature(member) ? "()" : ""}`;
    (member.questionToken ? optional : required).push(said);
  }
  return { required: sorted(required), optional: sorted(optional) };
}

/** A statement's members: the backticked names before "optional:" and after it. */
function statedMembers(text: string): { required: string[]; optional: string[] } {
  const [before = "", after = ""] = text.split(/optional:/i);
  const names = (part: string) =>
    sorted(ticked(part).filter((token) => /^[a-zA-Z]\w*(\(\))?$/.test(token)));
  return { required: names(before), optional: names(after) };
}

describe("what each part provides", () => {
  const bullets = [
    ...section(DOC, "### What each part provides").matchAll(
      /^- [^(\n]*\(`(\w+)`, `([^`]+)`\):([\s\S]*?)(?=^- |\n\n|$(?![\s\S]))/gm,
    ),
  ];

  test("the doc names the family, the scheme, the transfer method and the steps", () => {
    expect(sorted(bullets.map(([, name]) => name as string))).toEqual(
      sorted(["ChainFamily", "EvmScheme", "ExactMethod", "SettleSteps"]),
    );
  });

  test.each(bullets.map(([, name, file, text]) => [name, file, text] as const))(
    "%s (%s) provides what the doc says",
    (name, file, text) => {
      expect(statedMembers(text as string)).toEqual(membersOf(file as string, name as string));
    },
  );

  test("the store port offers the calls the doc lists", () => {
    const port = section(DOC, "### The store port");
    const calls = /Its calls([\s\S]*?)Beside it/.exec(port)?.[1] ?? "";
    const stated = statedMembers(calls);
    const actual = membersOf("core/store.ts", "SettlementStore");
    expect(stated).toEqual({
      required: actual.required.filter((m) => m.endsWith("()")),
      optional: actual.optional.filter((m) => m.endsWith("()")),
    });
  });

  test("a journal entry's states are the doc's", () => {
    const port = section(DOC, "### The store port");
    const states = /and a state: ([\s\S]*?)\. Its calls/.exec(port)?.[1] ?? "";
    const stated = ticked(states).filter((token) => /^[a-z]+$/.test(token));
    const tree = ts.createSourceFile("store.ts", source("core/store.ts"), ts.ScriptTarget.Latest);
    const alias = tree.statements.find(
      (s): s is ts.TypeAliasDeclaration =>
        ts.isTypeAliasDeclaration(s) && s.name.text === "EntryState",
    );
    const union = alias && ts.isUnionTypeNode(alias.type) ? alias.type.types : [];
    const actual = union.flatMap((t) =>
      ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal) ? [t.literal.text] : [],
    );
    expect(actual.length).toBeGreaterThan(3);
    expect(sorted(stated)).toEqual(sorted(actual));
  });
});

// The imports of src/, as top-level entries of src/ (a folder, or a file at its root).
const TOP = readdirSync(SRC).map((entry) =>
  statSync(path.join(SRC, entry)).isDirectory() ? `${entry}/` : entry,
);
const topOf = (file: string) => {
  const [first = "", ...rest] = file.split("/");
  return rest.length > 0 ? `${first}/` : first;
};
function topEdges(): [string, string][] {
  const edges = new Map<string, [string, string]>();
  for (const file of SRC_FILES) {
    const imported = ts.preProcessFile(source(file), true, true).importedFiles;
    for (const { fileName } of imported) {
      if (!fileName.startsWith(".")) continue;
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), fileName));
      const [from, to] = [topOf(file), topOf(target)];
      if (from !== to) edges.set(`${from} ${to}`, [from, to]);
    }
  }
  return [...edges.values()];
}

interface CruiserRule {
  readonly name: string;
  readonly from: { readonly path?: string; readonly pathNot?: string };
  readonly to: { readonly path?: string; readonly pathNot?: string; readonly circular?: boolean };
}
const cruiser = createRequire(import.meta.url)("../.dependency-cruiser.cjs") as {
  forbidden: CruiserRule[];
};

describe("the layers and the import rules", () => {
  const layers = section(DOC, "### Layers and imports");

  test("the stack holds every top-level entry of src/, and every import runs down it", () => {
    const stack = /may skip layers:\s*([\s\S]*?)\.\s/.exec(layers)?.[1] ?? "";
    const levels = stack.split("→").map((level) => ticked(level));
    const levelOf = new Map(levels.flatMap((names, i) => names.map((name) => [name, i] as const)));
    expect(sorted(levelOf.keys())).toEqual(sorted(TOP));
    const upward = topEdges().filter(
      ([from, to]) => (levelOf.get(to) as number) <= (levelOf.get(from) as number),
    );
    expect(upward.map(([from, to]) => `${from} → ${to}`)).toEqual([]);
  });

  const rows = tableRows(layers).flatMap(([rule = "", says = ""]) => {
    const name = /^`([a-z0-9-]+)`$/.exec(rule)?.[1];
    return name ? [[name, says] as const] : [];
  });
  const layerRules = cruiser.forbidden.filter(
    (rule) => rule.from.path && rule.to.path?.startsWith("^src/"),
  );

  /** A path of src/ standing for `token`: a folder's file, or the file itself. */
  const pathFor = (token: string) => (token.endsWith("/") ? `src/${token}x.ts` : `src/${token}`);

  /**
   * How a row's words differ from what its rule of .dependency-cruiser.cjs enforces; undefined
   * when the row says it in none of the shapes read here. Shapes: "`X` imports only itself, `A`
   * and `B`", "`X` imports nothing of ours outside `X`", "`X` imports nothing of `A` or `B`",
   * "of `A`, `X` imports `F` only", "in `A`, only `F` imports `B`", "a command's folder in `A`
   * imports no other command's".
   */
  function differences(says: string, rule: CruiserRule): string[] | undefined {
    const from = new RegExp(rule.from.path as string);
    const fromNot = rule.from.pathNot ? new RegExp(rule.from.pathNot) : undefined;
    const to = new RegExp(rule.to.path as string);
    const clause = says.split(":")[0] as string;
    const [subject = ""] = ticked(clause);
    const wrong: string[] = [];
    const expect = (holds: boolean, what: string) => {
      if (!holds) wrong.push(what);
    };
    /** Compares the top-level entries the row lets `subject` import with those the rule does. */
    const allows = (stated: Set<string>) => {
      expect(from.test(pathFor(subject)), `the rule is not about ${subject}`);
      const byRule = TOP.filter((top) => top === subject || !to.test(pathFor(top)));
      const tops = [...stated].filter((token) => TOP.includes(token));
      expect(sorted(tops).join() === sorted(byRule).join(), `allows ${sorted(byRule).join(", ")}`);
      for (const file of [...stated].filter((token) => !TOP.includes(token))) {
        expect(!to.test(`src/${file}`), `forbids ${file}`);
      }
    };
    const only = /imports only itself(.*)$/.exec(clause);
    if (only) {
      allows(new Set([subject, ...ticked(only[1] as string)]));
      return wrong;
    }
    if (/imports nothing of ours outside/.test(clause)) {
      allows(new Set([subject]));
      return wrong;
    }
    const nothingOf = /imports nothing of (.*)$/.exec(clause);
    if (nothingOf) {
      const forbidden = new Set(ticked(nothingOf[1] as string));
      allows(new Set(TOP.filter((top) => !forbidden.has(top))));
      return wrong;
    }
    const ofFolder = /^of `([^`]+)`, `([^`]+)` imports `([^`]+)` only/.exec(clause);
    if (ofFolder) {
      const [, folder = "", who = "", file = ""] = ofFolder;
      expect(from.test(pathFor(who)), `the rule is not about ${who}`);
      expect(to.test(pathFor(folder)), `lets ${who} import all of ${folder}`);
      expect(!to.test(`src/${file}`), `forbids ${file}`);
      const others = TOP.filter((top) => top !== folder && to.test(pathFor(top)));
      expect(others.length === 0, `forbids more than ${folder}: ${others.join(", ")}`);
      return wrong;
    }
    const inFolder = /^in `([^`]+)`, only `([^`]+)` imports `([^`]+)`/.exec(clause);
    if (inFolder) {
      const [, folder = "", file = "", target = ""] = inFolder;
      const exempt = (path: string) => from.test(path) && !fromNot?.test(path);
      expect(exempt(pathFor(folder)), `the rule is not about ${folder}`);
      expect(!exempt(`src/${file}`), `does not let ${file} import ${target}`);
      expect(to.test(pathFor(target)), `is not about importing ${target}`);
      return wrong;
    }
    const apart = /^a command's folder in `([^`]+)` imports no other command's/.exec(clause);
    if (apart) {
      const folder = apart[1] as string;
      expect(from.test(`src/${folder}a/x.ts`), `the rule is not about ${folder}`);
      expect(rule.to.pathNot?.includes("$1") === true, "lets a command import any other");
      return wrong;
    }
    return undefined;
  }

  test.each(layerRules.map((rule) => [rule.name, rule] as const))(
    "%s: the table says what the rule enforces",
    (name, rule) => {
      const says = rows.find(([row]) => row === name)?.[1] ?? "";
      const wrong = differences(says, rule);
      expect(wrong, `the table's row for ${name} says none of the shapes read here`).toBeDefined();
      expect(wrong, `the row for ${name} says "${says}", and the rule`).toEqual([]);
    },
  );

  test("zod's one door and the bundled devDependencies are those the rules let through", () => {
    const zod = cruiser.forbidden.find((rule) => rule.name === "zod-through-one-door");
    const door = ticked(rows.find(([row]) => row === "zod-through-one-door")?.[1] ?? "")[0] ?? "";
    expect(existsSync(path.join(SRC, door))).toBe(true);
    expect(new RegExp(zod?.from.pathNot as string).test(`src/${door}`)).toBe(true);
    const dev = cruiser.forbidden.find((rule) => rule.name === "no-dev-dependencies-in-src");
    const says = rows.find(([row]) => row === "no-dev-dependencies-in-src")?.[1] ?? "";
    const named = /but ([\w@/ ,]+?), bundled/.exec(says)?.[1]?.split(/, | and /) ?? [];
    const bundled = /\(([\w@/|]+)\)/.exec(dev?.to.pathNot ?? "")?.[1]?.split("|") ?? [];
    expect(named.length).toBeGreaterThan(2);
    expect(sorted(named)).toEqual(sorted(bundled));
  });
});
