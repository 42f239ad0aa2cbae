/**
 * The tree tells where a request goes (docs/design.md, "Layout"): nothing in src/ but the entry
 * point and the folders; each chain family a folder with its family.ts; each EVM scheme a folder of
 * its own, registered in src/evm/schemes.ts. (The import directions are checked by `npm run deps`.)
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { EVM_SCHEMES } from "../src/evm/schemes.js";

const src = path.join(path.dirname(fileURLToPath(import.meta.url)), "../src");

describe("the layout", () => {
  test("src/ holds the entry point and folders only", () => {
    const files = readdirSync(src).filter((name) => statSync(path.join(src, name)).isFile());
    expect(files).toEqual(["facilitator.ts"]);
    expect(
      readdirSync(src)
        .filter((name) => !files.includes(name))
        .sort(),
    ).toEqual([
      "bazaar",
      "cli",
      "core",
      "deny-list",
      "evm",
      "http",
      "protocol",
      "rpc",
      "store",
      "svm",
    ]);
  });

  test("each chain family is a folder with its family.ts, its chain access and its schemes", () => {
    for (const family of ["evm", "svm"]) {
      expect(existsSync(path.join(src, family, "family.ts"))).toBe(true);
      expect(existsSync(path.join(src, family, "chain"))).toBe(true);
      expect(existsSync(path.join(src, family, "exact"))).toBe(true);
    }
  });

  test("each registered EVM scheme is a folder of its own", () => {
    for (const scheme of EVM_SCHEMES) {
      expect(statSync(path.join(src, "evm", scheme.name)).isDirectory()).toBe(true);
    }
  });
});

/** The files of src/ (outside the stores themselves) whose code matches `pattern`. */
function callersOf(pattern: RegExp): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const full = path.join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith(".ts") && pattern.test(readFileSync(full, "utf8"))) {
        found.push(path.relative(src, full));
      }
    }
  };
  walk(src);
  return found.filter((file) => !file.startsWith("store/") && file !== "core/store.ts").sort();
}

describe('one settle loop (docs/design.md, "The settle loop")', () => {
  test("a settlement's turn is taken by the loop, and by what follows a transaction already sent", () => {
    // The reconciler and a claim following its batch take the turn of what is already sent; the
    // gas we send a payer for its approval takes the payer's own turn (one funding per payer at a
    // time, whichever settlement asks: gas-and-fees.md, "Sponsoring").
    expect(callersOf(/\b(journal|store)\.claim\(/)).toEqual([
      "core/reconciler.ts",
      "core/settle-loop.ts",
      "evm/batch-settlement/claim-pickup.ts",
      "evm/chain/sponsoring.ts",
    ]);
  });

  test("a transaction is written down by each family's sending code only", () => {
    expect(callersOf(/\.recordSend\(/)).toEqual([
      "cli/facilitator/watched-journal.ts",
      "evm/chain/prelude.ts",
      "evm/chain/transactions.ts",
      "svm/exact/settle.ts",
    ]);
  });
});
