/**
 * devnet.env files that outlive their devnet, or meet another devnet's (issue 28): a `--svm`
 * devnet's devnet.env, then a plain devnet's sourced in the same shell, leaves no Solana key
 * behind; with the devnet.env of a devnet that has stopped, every command says so and names the
 * directory that is gone, doctor included, and none makes that directory again. And serve's
 * banner on a terminal lists the Solana fee payer beside the settlement key.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BIN,
  bannerValue,
  cleanEnv,
  type DevnetProcess,
  ROOT,
  shell,
  spawnCommand,
  spawnDevnet,
  stop,
  waitFor,
} from "./helpers/devnet-process.js";

/** The --svm devnet, stopped once its files are copied; the plain devnet that keeps running. */
let stopped: DevnetProcess | undefined;
let running: DevnetProcess | undefined;
let stoppedDir: string;
let feePayer: string;
let copies: string;
/** Copies of the stopped devnet's devnet.env and request.json, which go with its directory. */
let staleEnv: string;
let staleRequest: string;
let runningEnv: string;

const STALE = (dir: string) =>
  `this devnet.env belongs to a devnet that has stopped (${dir} is gone): source the devnet.env the running devnet printed`;

async function bannerOf(devnet: DevnetProcess): Promise<string> {
  await waitFor(devnet, "devnet.env");
  return waitFor(devnet, "npx facilitator doctor");
}

/** The environment a shell has after sourcing `files`, in order. */
async function sourced(...files: string[]): Promise<NodeJS.ProcessEnv> {
  const run = await shell(files, "env -0");
  return Object.fromEntries(
    run.stdout
      .split("\0")
      .filter((entry) => entry.includes("="))
      .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
  );
}

beforeAll(async () => {
  copies = await mkdtemp(path.join(os.tmpdir(), "facilitator-stale-test-"));
  stopped = spawnDevnet(["--svm", "--port", "0", "--svm-port", "0"]);
  const banner = await bannerOf(stopped);
  stoppedDir = bannerValue(banner, "directory");
  feePayer = bannerValue(banner.slice(banner.indexOf("Solana")), "fee payer");
  staleEnv = path.join(copies, "devnet.env");
  staleRequest = path.join(copies, "request.json");
  await copyFile(path.join(stoppedDir, "devnet.env"), staleEnv);
  await copyFile(path.join(stoppedDir, "request.json"), staleRequest);
}, 90_000);

afterAll(async () => {
  await Promise.all([stop(stopped), stop(running)]);
  if (copies) await rm(copies, { recursive: true, force: true });
});

describe("serve's banner on a terminal", () => {
  it("lists the Solana fee payer beside the settlement key", async () => {
    const env = await sourced(staleEnv);
    // A terminal of 120 columns: `script` gives serve one, as a user's shell would.
    const child = spawn(
      "script",
      [
        "-qfc",
        `stty cols 120 rows 40; exec '${process.execPath}' '${BIN}' serve --port 0`,
        "/dev/null",
      ],
      { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"], detached: true },
    );
    let screen = "";
    child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
      screen += chunk;
    });
    try {
      const deadline = Date.now() + 20_000;
      while (!screen.includes("probes") && Date.now() < deadline && child.exitCode === null) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const lines = screen.replace(/\r/g, "").split("\n");
      const at = lines.findIndex((line) => line.startsWith("  signers"));
      expect(at, screen).toBeGreaterThan(0);
      expect(lines[at]).toContain("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
      expect(lines.slice(at, at + 3).join("\n")).toContain(`${feePayer} (Solana fee payer)`);
    } finally {
      if (child.pid && child.exitCode === null) process.kill(-child.pid, "SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve).once("error", resolve));
    }
  });

  it("and its JSON listening line, when stderr is no terminal, carries the fee payer too", async () => {
    const serve = spawnCommand(["serve", "--port", "0"], await sourced(staleEnv));
    try {
      const line = (await waitFor(serve, '"event":"listening"', { stream: "stderr" })).split(
        "\n",
      )[0];
      expect(JSON.parse(line ?? "")).toMatchObject({ svmFeePayers: [feePayer] });
    } finally {
      await stop(serve);
    }
  });
});

describe("a devnet.env of a devnet that has stopped", () => {
  beforeAll(async () => {
    await stop(stopped);
    expect(existsSync(stoppedDir)).toBe(false);
    running = spawnDevnet(["--port", "0"]);
    runningEnv = path.join(bannerValue(await bannerOf(running), "directory"), "devnet.env");
  }, 60_000);

  it("sourced before a plain devnet's, leaves nothing of the Solana key: serve starts", async () => {
    const env = await sourced(staleEnv, runningEnv);
    expect(env.FACILITATOR_SVM_PRIVATE_KEY_FILE).toBeUndefined();
    const serve = spawnCommand(["serve", "--port", "0"], env);
    try {
      const said = await waitFor(serve, '"event":"listening"', { stream: "stderr" });
      expect(said).not.toContain("Solana key file");
    } finally {
      await stop(serve);
    }
  });

  it("verify, settle and serve say so, naming the directory that is gone", async () => {
    for (const command of [
      `facilitator verify ${staleRequest}`,
      `facilitator settle ${staleRequest}`,
      "facilitator serve --port 0",
    ]) {
      const run = await shell([staleEnv], command);
      expect(run.code, command).toBe(2);
      const line = run.stderr.trimEnd().split("\n").at(-1) ?? "";
      expect(line, command).toMatch(/^facilitator: /);
      expect(line, command).toContain(STALE(stoppedDir));
      expect(JSON.parse(run.stdout).message, command).toContain(STALE(stoppedDir));
    }
    expect(existsSync(stoppedDir)).toBe(false);
  });

  it("doctor shows the journal as a stopped devnet's, not as ready", async () => {
    const run = await shell([staleEnv], "facilitator doctor");
    const journal = path.join(stoppedDir, "journal.jsonl");
    expect(run.stdout).not.toContain("✔ journal");
    expect(run.stdout).toContain(
      `✖ journal  ${journal}: this devnet.env belongs to a devnet that has stopped (${stoppedDir} is gone)\n           → source the devnet.env the running devnet printed`,
    );
    expect(run.stdout).toContain(
      `✖ key      cannot read the private key file from FACILITATOR_PRIVATE_KEY_FILE: ${STALE(stoppedDir)}`,
    );
    expect(existsSync(stoppedDir)).toBe(false);
    // The copies of the env and request are all that is left of it.
    expect(await readFile(staleEnv, "utf8")).toContain(stoppedDir);
    expect(cleanEnv().FACILITATOR_JOURNAL).toBeUndefined();
  });
});
