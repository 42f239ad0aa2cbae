/**
 * What a newcomer sees from `npm install`: no warning to wonder about. The tree the lockfile holds
 * resolves without a peer conflict (ERESOLVE) or a package this Node cannot run (EBADENGINE), and
 * every dependency install script it runs is declared in package.json's allowScripts.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const run = promisify(execFile);
const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-install-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** npm's own environment, without the npm_* variables of an `npm test` that runs this file. */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith("npm_")),
  );
}

function warnings(output: string): string[] {
  return output.split("\n").filter((line) => /^npm warn/i.test(line));
}

describe("npm install", () => {
  it("resolves package.json and its lockfile with no warning: no ERESOLVE, no EBADENGINE", async () => {
    // The project's package.json without its scripts (prepare would build) and its lockfile, in a
    // directory of their own with an empty cache: npm plans the install and reports as it would.
    const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
    delete manifest.scripts;
    writeFileSync(path.join(dir, "package.json"), JSON.stringify(manifest, null, 2));
    writeFileSync(
      path.join(dir, "package-lock.json"),
      readFileSync(path.join(ROOT, "package-lock.json")),
    );
    const flags = ["--dry-run", "--prefer-offline", "--no-audit", "--no-fund"];
    const { stdout, stderr } = await run(
      "npm",
      ["install", ...flags, "--cache", path.join(dir, "cache")],
      { cwd: dir, env: npmEnv() },
    );
    expect(warnings(stderr)).toEqual([]);
    expect(stdout).toMatch(/^added \d+ packages/m);
  });

  it("declares in allowScripts every install script the installed packages have", async () => {
    const { stdout, stderr } = await run("npm", ["install-scripts", "ls"], {
      cwd: ROOT,
      env: npmEnv(),
    });
    expect(warnings(stderr)).toEqual([]);
    expect(stdout.trim()).toBe("No packages with unreviewed install scripts.");
  });
});
