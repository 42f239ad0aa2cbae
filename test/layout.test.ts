/**
 * The tree tells where a request goes (docs/design.md, "Layout"): nothing in src/ but the entry
 * point and the folders; each chain family a folder with its family.ts; each EVM scheme a folder of
 * its own, registered in src/evm/schemes.ts. (The import directions are checked by `npm run deps`.)
 */
import { existsSync, readdirSync, statSync } from "node:fs";
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
    ).toEqual(["cli", "core", "evm", "http", "protocol", "store", "svm"]);
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
