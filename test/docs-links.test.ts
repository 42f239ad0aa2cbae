/**
 * A newcomer can walk the docs: every relative link in README.md and docs/*.md reaches a file
 * (and a heading, when it names one), every repository path the pages name exists, the links
 * GET /llms.txt hands out resolve, and the README stays short enough to read in one go.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { llmsTxt } from "../src/http/llms.js";
import { brokenLink, docPages, linksOf, REPO, readDoc, section } from "./helpers/markdown.js";

const pages = docPages();

describe("links", () => {
  test("the docs have pages", () => {
    expect(pages).toContain("README.md");
    expect(pages).toContain("docs/README.md");
    expect(pages.length).toBeGreaterThan(5);
  });

  test.each(pages)("every relative link in %s resolves", (page) => {
    const broken = linksOf(readDoc(page))
      .filter((link) => !/^[a-z][a-z0-9+.-]*:/i.test(link.target))
      .map((link) => ({ ...link, why: brokenLink(page, link.target) }))
      .filter((link) => link.why !== undefined)
      .map((link) => `${page}:${link.line} (${link.target}): ${link.why}`);
    expect(broken).toEqual([]);
  });

  test("every page in docs/ is reachable from docs/README.md", () => {
    const index = new Set(
      linksOf(readDoc("docs/README.md")).map((link) => link.target.split("#")[0]),
    );
    const orphans = pages
      .filter((page) => page.startsWith("docs/") && page !== "docs/README.md")
      .filter((page) => !index.has(path.basename(page)));
    expect(orphans).toEqual([]);
  });
});

describe("repository paths the docs name", () => {
  // `src/…`, `test/…` and the like, each alone in backticks; patterns (`*`) aside.
  const named = pages.flatMap((page) =>
    [...readDoc(page).matchAll(/`((?:src|test|bench|scripts|bin|\.ci)\/[\w./-]*)`/g)].map(
      (match) => ({ page, named: match[1] as string }),
    ),
  );

  test("exist", () => {
    expect(named.length).toBeGreaterThan(0);
    const missing = named
      .filter(({ named }) => !existsSync(path.join(REPO, named)))
      .map(({ page, named }) => `${page}: ${named}`);
    expect(missing).toEqual([]);
  });
});

// LEAD: GET /llms.txt (src/http/llms.ts) still points at README.md sections that moved to docs/.
// This test fails until its links are updated (the report lists the replacements).
describe("GET /llms.txt", () => {
  test("its documentation links resolve", () => {
    const targets = [...llmsTxt().matchAll(/\b(?:README\.md|docs\/[\w.-]+\.md)(?:#[\w-]+)?/g)].map(
      (match) => match[0],
    );
    expect(targets.length).toBeGreaterThan(0);
    const broken = targets
      .map((target) => ({ target, why: brokenLink("llms.txt", target) }))
      .filter((link) => link.why !== undefined)
      .map((link) => `${link.target}: ${link.why}`);
    expect(broken).toEqual([]);
  });
});

describe("README.md", () => {
  test("stays under 250 lines, and says where the unsupported things are refused", () => {
    const readme = readDoc("README.md");
    expect(readme.split("\n").length).toBeLessThanOrEqual(250);
    // The section anchors link to it (docs, /llms.txt); it says which codes the refusals carry.
    expect(section(readme, "## Not supported yet")).toContain("`unsupported_*`");
  });
});
