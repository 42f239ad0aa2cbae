/**
 * `npm run build` while the CLI is in use (npm test and `npm pack` rebuild dist/): a command
 * started during the build runs the old build or the new one, and never finds main.js missing
 * or half a build (issue 39), even when every chunk changes name (the second build is not
 * minified, as when the source changed). The build here goes to a folder of its own
 * (BUILD_OUTDIR), beside a copy of bin/facilitator.js, so that the suite's dist/ is left alone.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-build-"));
const dist = path.join(dir, "dist");
const bin = path.join(dir, "bin", "facilitator.js");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** scripts/build.ts into `dist`, minified or not (so that two builds' chunks differ). */
function startBuild(minify: boolean): ChildProcess {
  return spawn(process.execPath, ["--import", "tsx", "scripts/build.ts"], {
    cwd: ROOT,
    env: { ...process.env, BUILD_OUTDIR: dist, BUILD_MINIFY: minify ? "1" : "0" },
    stdio: ["ignore", "ignore", "pipe"],
  });
}

function finished(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  started: number;
  ended: number;
}

function version(): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, "--version"], { timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : null) : 0;
      resolve({ code, stdout, stderr, started, ended: Date.now() });
    });
  });
}

it("a command run during a rebuild never finds main.js missing or half a build", async () => {
  // bin/facilitator.js as the package has it, loading ../dist/main.js; the bundle's packages
  // (secp256k1, pg, …) resolve from the project's node_modules.
  mkdirSync(path.dirname(bin));
  copyFileSync(path.join(ROOT, "bin", "facilitator.js"), bin);
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }));
  symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
  expect(await finished(startBuild(true))).toBe(0);
  expect((await version()).stdout).toBe("0.1.0\n");

  const build = startBuild(false);
  let stderr = "";
  build.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const built = finished(build);
  const buildStarted = Date.now();
  let done = false;
  void built.then(() => {
    done = true;
  });

  // Every 2 ms, whether main.js is there; and `facilitator --version`, two at a time, back to back.
  let polls = 0;
  let missing = 0;
  const poll = (async () => {
    while (!done) {
      polls += 1;
      if (!existsSync(path.join(dist, "main.js"))) missing += 1;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  const runs: Run[] = [];
  const lane = async () => {
    while (!done) runs.push(await version());
  };
  await Promise.all([lane(), lane(), poll]);
  const buildEnded = Date.now();
  expect(await built, stderr).toBe(0);

  const failed = runs.filter((run) => run.code !== 0 || run.stdout !== "0.1.0\n");
  expect(failed.map((run) => run.stderr)).toEqual([]);
  expect(missing).toBe(0);
  // The commands did run while the build did: some started and ended inside it.
  const inside = runs.filter((run) => run.started >= buildStarted && run.ended <= buildEnded);
  expect(inside.length).toBeGreaterThan(0);
  expect(polls).toBeGreaterThan(20);

  // Only the new build is left: no staging folder, and no file the first build wrote (its
  // minified chunks have other names than the new ones).
  const files = readdirSync(dist);
  expect(files.filter((name) => !name.endsWith(".js"))).toEqual([]);
  expect(files).toContain("serve-worker.js");
  const older = files.filter((name) => statSync(path.join(dist, name)).mtimeMs < buildStarted);
  expect(older).toEqual([]);
  expect((await version()).stdout).toBe("0.1.0\n");
}, 120_000);
