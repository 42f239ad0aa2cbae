/**
 * `npm test`: the build, then the static checks (typecheck, Biome, the import rules) beside the
 * test files rather than before them. Most of a test run waits on chains and child processes, so
 * the checks' minute of CPU fits in its idle time instead of adding to it. The tests' output
 * streams as it comes; each check's is printed at the end, in full when it failed. Exit 1 when
 * anything failed. Arguments go to vitest (`npm test -- test/foo.test.ts`). The long soaks run
 * smaller, and the longest is left out unless a file is named, except with FACILITATOR_TEST_SOAK=1
 * (`npm run test:soak`, what CI runs).
 */
import { spawn } from "node:child_process";

interface Ran {
  readonly name: string;
  readonly code: number;
  readonly seconds: number;
  readonly output: string;
}

/** Runs a command, keeping its output (and passing it on as it comes, for the tests). */
function run(name: string, args: string[], stream = false): Promise<Ran> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(args[0] as string, args.slice(1), {
      stdio: ["ignore", "pipe", "pipe"],
      // Through a pipe, vitest would drop its colours in a terminal.
      env: stream && process.stdout.isTTY ? { ...process.env, FORCE_COLOR: "1" } : process.env,
    });
    const chunks: Buffer[] = [];
    child.stdout?.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (stream) process.stdout.write(chunk);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (stream) process.stderr.write(chunk);
    });
    child.on("error", (error) => {
      resolve({ name, code: 1, seconds: 0, output: `cannot run ${args[0]}: ${error.message}` });
    });
    child.on("close", (code, signal) => {
      resolve({
        name,
        code: code ?? (signal ? 1 : 0),
        seconds: (performance.now() - started) / 1000,
        output: Buffer.concat(chunks).toString("utf8"),
      });
    });
  });
}

const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const npx = process.platform === "win32" ? "npx.cmd" : "npx";

// The CLI's tests run dist/: it comes first.
const build = await run("build", [npm, "run", "-s", "build"]);
if (build.code !== 0) {
  process.stdout.write(build.output);
  process.stdout.write(`\nbuild failed (exit ${build.code})\n`);
  process.exit(1);
}

const checks = (async () => {
  const done: Ran[] = [];
  // At a lower priority where `nice` exists: the tests' timings come first.
  const nice = process.platform === "linux" ? ["nice", "-n", "10"] : [];
  for (const name of ["typecheck", "lint", "deps"]) {
    done.push(await run(name, [...nice, npm, "run", "-s", name]));
  }
  return done;
})();
// The long soaks (test/helpers/soak.ts): npm run test:soak runs them, and every test at full size.
const SOAK_FILES = ["test/memory-payers.test.ts"];
const soak = process.env.FACILITATOR_TEST_SOAK === "1";
const args = process.argv.slice(2);
const named = args.some((arg) => !arg.startsWith("-"));
const leaveOut = soak || named ? [] : SOAK_FILES.flatMap((file) => ["--exclude", file]);
const tests = await run(
  "tests",
  [npx, "--no-install", "vitest", "run", ...leaveOut, ...args],
  true,
);
const ran = [build, ...(await checks), tests];

process.stdout.write("\n");
for (const { name, code, seconds, output } of ran) {
  if (code !== 0 && name !== "tests") process.stdout.write(`\n${output.trimEnd()}\n`);
  process.stdout.write(
    `${name}: ${code === 0 ? "ok" : `FAILED (exit ${code})`}, ${seconds.toFixed(0)} s\n`,
  );
}
// The last line stays the one any CI reads (test/summary-reporter.ts), naming a failed check too.
const summary =
  /^\d+ passed, \d+ failed, \d+ skipped$/m.exec(tests.output)?.[0] ?? "no test summary";
const failedChecks = ran.filter((r) => r.code !== 0 && r.name !== "tests").map((r) => r.name);
process.stdout.write(
  `${summary}${failedChecks.length > 0 ? `; failed checks: ${failedChecks.join(", ")}` : ""}\n`,
);
process.exit(ran.some((r) => r.code !== 0) ? 1 : 0);
