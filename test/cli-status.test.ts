/**
 * `facilitator status` and `reconcile` say what is true, the built CLI against the project's Solana
 * devnet: a Solana payment settled a moment ago is found from its request file (its settlement is
 * named by the fee payer's signature, which the configured fee payer's key makes again), and
 * without that key status says why it cannot tell instead of "never settled here"; a miss names
 * the journal file it asked; reconcile counts every outcome, zeros included; and both print one
 * line for people on stderr when it is a terminal (none with --quiet), stdout one JSON document.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { getBase58Decoder } from "@solana/kit";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type SvmDevnet, startSvmDevnet } from "../src/svm/devnet/index.js";
import { runCli } from "./helpers/run-cli.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = path.join(ROOT, "bin", "facilitator.js");

let devnet: SvmDevnet;
let dir: string;
let env: Record<string, string>;
/** A Solana payment settled by the CLI, and its transaction's signature. */
let request: string;
let signature: string;

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startSvmDevnet({ slotMs: 100 }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-cli-status-")),
  ]);
  // What the devnet's devnet.env sets: the RPC, the fee payer's key, the journal.
  env = {
    FACILITATOR_RPC_URL: devnet.rpcUrl,
    FACILITATOR_SVM_PRIVATE_KEY: devnet.feePayer.secretKey,
    FACILITATOR_JOURNAL: path.join(dir, "journal.jsonl"),
    FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
  };
  const paid = await runCli(["pay", "--amount", "0.01", "-q"], env);
  expect(paid.code, paid.stderr).toBe(0);
  request = path.join(dir, "svm1.json");
  await writeFile(request, paid.stdout);
  const settled = await runCli(["settle", request, "-q"], env);
  expect(settled.code, settled.stdout + settled.stderr).toBe(0);
  signature = (JSON.parse(settled.stdout) as { transactionHash: string }).transactionHash;
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The CLI with stderr on a pseudo-terminal (script(1)) and stdout to a file: what a person sees. */
async function onTerminal(
  args: string[],
  extra: Record<string, string> = {},
): Promise<{ terminal: string; stdout: string; code: number }> {
  const out = path.join(dir, `stdout-${Math.random().toString(36).slice(2)}.json`);
  const quoted = args.map((a) => `'${a}'`).join(" ");
  const inner = `stty cols 200 rows 24; "${process.execPath}" "${BIN}" ${quoted} > "${out}"; echo "EXIT=$?"`;
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("FACILITATOR_")),
  );
  const terminal = await new Promise<string>((resolve, reject) => {
    const child = spawn("script", ["-qec", inner, "/dev/null"], {
      cwd: ROOT,
      env: { ...clean, ...env, ...extra, FORCE_COLOR: "0", SHELL: "/bin/bash" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let text = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      text += chunk;
    });
    child.once("error", reject);
    child.once("exit", () => resolve(text.replace(/\r/g, "")));
  });
  const code = Number(/EXIT=(\d+)/.exec(terminal)?.[1] ?? "-1");
  return {
    terminal: terminal.replace(/EXIT=\d+\n?/, ""),
    stdout: await readFile(out, "utf8"),
    code,
  };
}

describe("facilitator status of a Solana payment", () => {
  test("settled seconds ago, it is found from its request file: answered, and mined", async () => {
    const run = await runCli(["status", request], env);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      found: true,
      state: "answered",
      transactions: [signature],
      chain: { network: devnet.network, onChain: "mined", transaction: signature },
    });
  });

  test("without the fee payer's key it says why it cannot tell, and to ask by signature", async () => {
    const run = await runCli(["status", request], { ...env, FACILITATOR_SVM_PRIVATE_KEY: "" });
    expect(run.code).toBe(1);
    const answer = JSON.parse(run.stdout) as { found: boolean; detail: string };
    expect(answer.found).toBe(false);
    expect(answer.detail).toContain(`fee payer ${devnet.feePayer.address}`);
    expect(answer.detail).toContain("--transaction");
    expect(answer.detail).not.toContain("never settled here");
  });

  test("a signature the journal never saw: not found in the journal, named as such", async () => {
    const unknown = getBase58Decoder().decode(randomBytes(64));
    const run = await runCli(["status", "--transaction", unknown], env);
    expect(run.code, run.stdout + run.stderr).toBe(1);
    const answer = JSON.parse(run.stdout) as { detail: string };
    expect(answer.detail).toMatch(
      new RegExp(`^the journal ${env.FACILITATOR_JOURNAL} holds no settlement for it`),
    );
    expect(answer.detail).not.toContain("the store");
  });
});

describe("facilitator reconcile", () => {
  test("counts every outcome, zeros included", async () => {
    const run = await runCli(["reconcile"], env);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      ok: true,
      followed: 0,
      counts: { landed: 0, failed: 0, dropped: 0, open: 0, busy: 0, error: 0 },
      settlements: [],
    });
  });
});

describe("one line for people on a terminal's stderr, as settle and verify print", () => {
  test("status: found, and not found", async () => {
    const found = await onTerminal(["status", request]);
    expect(found.code).toBe(0);
    expect(found.terminal.trim()).toBe(
      `✔ found answered (landed, and its success was answered); on ${devnet.network}: mined in slot ${
        (JSON.parse(found.stdout) as { chain: { block: string } }).chain.block
      }`,
    );
    expect(JSON.parse(found.stdout)).toMatchObject({ found: true });

    const missing = await onTerminal(["status", request], { FACILITATOR_SVM_PRIVATE_KEY: "" });
    expect(missing.code).toBe(1);
    expect(missing.terminal.trim()).toMatch(/^✖ not found: cannot tell which settlement it is: /);
    expect(missing.terminal.trim().split("\n")).toHaveLength(1);
  });

  test("reconcile: what it followed", async () => {
    const run = await onTerminal(["reconcile"]);
    expect(run.code).toBe(0);
    expect(run.terminal.trim()).toBe("✔ nothing left open: no settlement to follow");
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, followed: 0 });
  });

  test("--quiet: nothing on the terminal, the same JSON on stdout", async () => {
    const [status, reconcile] = await Promise.all([
      onTerminal(["status", request, "--quiet"]),
      onTerminal(["reconcile", "-q"]),
    ]);
    expect(status.terminal.trim()).toBe("");
    expect(reconcile.terminal.trim()).toBe("");
    expect(JSON.parse(status.stdout)).toMatchObject({ found: true });
    expect(JSON.parse(reconcile.stdout)).toMatchObject({ ok: true });
  });
});
