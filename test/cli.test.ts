/**
 * The CLI end to end: the real `node bin/facilitator.js` (built dist/) as a subprocess against
 * one devnet. stdout must be exactly one JSON document, the exit status must follow the contract,
 * and the settlement key must never show up in any output.
 */

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { type Address, createPublicClient, erc20Abi, type Hash, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = path.join(ROOT, "bin", "facilitator.js");
const RUN_TIMEOUT_MS = 20_000;

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

interface RunOptions {
  /** Written to the child's stdin, which is then closed. Without it stdin is /dev/null. */
  readonly stdin?: string;
  /** Added to the base environment; an undefined value removes the variable. */
  readonly env?: Record<string, string | undefined>;
}

let devnet: Devnet;
let dir: string;
let facilitatorKey: string;
/** Every output of every run, checked for the key as it comes in. */
const outputs: string[] = [];

/** The parent's environment without any FACILITATOR_* variable, colour forced off. */
function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("FACILITATOR_")) env[name] = value;
  }
  env.FORCE_COLOR = "0";
  return env;
}

/** No 16-character run of the key's hex appears in the text (case-insensitive). */
function expectNoKey(text: string, key: string = facilitatorKey): void {
  const hex = key.trim().replace(/^0x/i, "").toLowerCase();
  const haystack = text.toLowerCase();
  for (let i = 0; i + 16 <= hex.length; i += 8) {
    expect(haystack, "the private key leaked into the output").not.toContain(hex.slice(i, i + 16));
  }
}

function spawnCli(args: string[], options: RunOptions = {}): ChildProcess {
  const env = baseEnv();
  env.FACILITATOR_RPC_URL = devnet.rpcUrl;
  env.FACILITATOR_PRIVATE_KEY = facilitatorKey;
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env,
    stdio: [options.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
}

/** Runs the CLI to completion; fails the test if the key shows up in either output. */
async function cli(args: string[], options: RunOptions = {}): Promise<Run> {
  const child = spawnCli(args, options);
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  if (options.stdin !== undefined) child.stdin?.end(options.stdin);
  const run = await new Promise<Run>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`facilitator ${args.join(" ")} did not finish in ${RUN_TIMEOUT_MS} ms`));
    }, RUN_TIMEOUT_MS);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  outputs.push(run.stdout, run.stderr);
  expectNoKey(run.stdout);
  expectNoKey(run.stderr);
  return run;
}

/** stdout as exactly one JSON document: JSON.parse of the whole text must succeed. */
function json(run: Run): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(run.stdout);
  } catch {
    throw new Error(
      `stdout is not one JSON document (exit ${run.code}):\n${run.stdout}\nstderr:\n${run.stderr}`,
    );
  }
  expect(typeof value === "object" && value !== null && !Array.isArray(value)).toBe(true);
  return value as Record<string, unknown>;
}

/** The exit status, with the outputs in the failure message when it is not the expected one. */
function expectExit(run: Run, code: number): void {
  expect(run.code, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toBe(code);
}

async function writeJson(name: string, value: unknown): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `${JSON.stringify(value, null, 2)}\n`);
  return file;
}

const publicClient = () =>
  createPublicClient({ transport: http(devnet.rpcUrl, { retryCount: 0 }) });

function balanceOf(owner: Address): Promise<bigint> {
  return publicClient().readContract({
    address: devnet.token.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [owner],
  });
}

function payer(index: number): DevAccount {
  const account = devnet.payers[index];
  if (!account) throw new Error(`the devnet has no payer ${index}`);
  return account;
}

/** A request signed with viem for the devnet (reference dialect unless asked), 0.01 USDC. */
const sample = (index = 0, dialect: "reference" | "x402" = "reference") =>
  signSampleRequest(devnet, { payer: payer(index), dialect });

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet(),
    mkdtemp(path.join(os.tmpdir(), "facilitator-cli-test-")),
  ]);
  facilitatorKey = devnet.facilitator.privateKey;
});

afterAll(async () => {
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("verify", () => {
  it("reads a request from a file, in both dialects", async () => {
    const reference = await writeJson("verify-ref.json", await sample(0));
    const x402 = await writeJson("verify-x402.json", await sample(1, "x402"));
    const [a, b] = await Promise.all([cli(["verify", reference]), cli(["verify", x402])]);
    expectExit(a, 0);
    expect(json(a)).toEqual({ success: true, payer: payer(0).address });
    expectExit(b, 0);
    expect(json(b)).toEqual({ isValid: true, payer: payer(1).address });
    // Spawned with pipes, stderr is no terminal: no human summary.
    expect(a.stderr).toBe("");
    expect(b.stderr).toBe("");
  });

  it("reads stdin with no FILE and with -, in both dialects", async () => {
    const requirements = requirementsV2(devnet);
    const payload = await clientPayload(payer(2), requirements);
    const x402Body = JSON.stringify({
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    const referenceBody = JSON.stringify({ payload, requirements });
    const runs = await Promise.all([
      cli(["verify"], { stdin: referenceBody }),
      cli(["verify", "-"], { stdin: referenceBody }),
      cli(["verify"], { stdin: x402Body }),
      cli(["verify", "-", "--quiet"], { stdin: x402Body }),
    ]);
    for (const run of runs) expectExit(run, 0);
    const [noFile, dash, x402NoFile, x402Dash] = runs.map(json);
    expect(noFile).toEqual({ success: true, payer: payer(2).address });
    expect(dash).toEqual({ success: true, payer: payer(2).address });
    expect(x402NoFile).toEqual({ isValid: true, payer: payer(2).address });
    expect(x402Dash).toEqual({ isValid: true, payer: payer(2).address });
  });

  it("with --requirements, FILE (or stdin) holds only the PaymentPayload", async () => {
    const requirements = requirementsV2(devnet);
    const payload = await clientPayload(payer(3), requirements);
    const payloadFile = await writeJson("payload-only.json", payload);
    const requirementsFile = await writeJson("requirements.json", requirements);
    const [fromFile, fromStdin] = await Promise.all([
      cli(["verify", payloadFile, "--requirements", requirementsFile]),
      cli(["verify", "-", "--requirements", requirementsFile], { stdin: JSON.stringify(payload) }),
    ]);
    expectExit(fromFile, 0);
    expect(json(fromFile)).toEqual({ success: true, payer: payer(3).address });
    expectExit(fromStdin, 0);
    expect(json(fromStdin)).toEqual({ success: true, payer: payer(3).address });
  });

  it("a rejected payment exits 1 with the failure code", async () => {
    const payload = await clientPayload(payer(0), requirementsV2(devnet, { amount: "10000" }));
    const requirements = requirementsV2(devnet, { amount: "20000" });
    const reference = await writeJson("mismatch-ref.json", { payload, requirements });
    const x402 = await writeJson("mismatch-x402.json", {
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    const [a, b] = await Promise.all([cli(["verify", reference]), cli(["verify", x402])]);
    expectExit(a, 1);
    const body = json(a);
    expect(body).toMatchObject({ success: false, error: "amount_mismatch" });
    expect(typeof body.message).toBe("string");
    expectExit(b, 1);
    expect(json(b)).toMatchObject({ isValid: false, payer: payer(0).address });
    expect(json(b).invalidReason).toEqual(expect.any(String));
    // stderr is no terminal: one plain line says why, for the CI log; stdout stays one document.
    expect(a.stderr).toMatch(/^facilitator: verify: amount_mismatch: [^\n]+\n$/);
  });

  it("input that is not JSON, or a missing file, exits 2 with an invalid_request answer", async () => {
    const notJson = path.join(dir, "not-json.txt");
    await writeFile(notJson, "this is not json\n");
    const missing = path.join(dir, "does-not-exist.json");
    const runs = await Promise.all([
      cli(["verify"], { stdin: "not json at all" }),
      cli(["verify", notJson]),
      cli(["verify", missing]),
      cli(["verify"], { stdin: "" }),
      cli(["settle", missing]),
      cli(["verify", "--requirements", missing], { stdin: "{}" }),
    ]);
    for (const run of runs) {
      expectExit(run, 2);
      expect(json(run)).toMatchObject({ success: false, error: "invalid_request" });
      // Without a terminal the failure is still said on stderr, in one line.
      expect(run.stderr).toMatch(/^facilitator: [^\n]+\n$/);
    }
    expect(json(runs[2] as Run).message).toContain("does-not-exist.json");
    expect(runs[2]?.stderr).toContain("does-not-exist.json");
  });

  it("an empty request file (a failed `pay … > req.json`) is said to be empty, not a missing payload", async () => {
    const empty = path.join(dir, "empty-request.json");
    await writeFile(empty, "");
    const [verify, settle] = await Promise.all([cli(["verify", empty]), cli(["settle", empty])]);
    for (const run of [verify, settle]) {
      expectExit(run, 2);
      const message = json(run).message as string;
      expect(message).toContain(`${empty} is empty`);
      expect(message).toContain("did the command that wrote it fail?");
      expect(message).not.toContain("payload");
    }
  });

  it("a well-formed JSON body with missing fields exits 2 with invalid_request", async () => {
    const run = await cli(["verify"], { stdin: JSON.stringify({ payload: {} }) });
    expectExit(run, 2);
    expect(json(run)).toMatchObject({ success: false, error: "invalid_request" });
  });

  it("an unreachable RPC exits 3 with chain_unavailable", async () => {
    const file = await writeJson("unreachable.json", await sample(0));
    const [verify, settle] = await Promise.all([
      cli(["verify", file, "--rpc-url", "http://127.0.0.1:1"]),
      cli(["settle", file, "--rpc-url", "http://127.0.0.1:1"]),
    ]);
    expectExit(verify, 3);
    expect(json(verify)).toMatchObject({ success: false, error: "chain_unavailable" });
    expectExit(settle, 3);
    expect(json(settle)).toMatchObject({ success: false, error: "chain_unavailable" });
    expect(verify.stderr).toMatch(/^facilitator: verify: chain_unavailable: [^\n]+\n$/);
    expect(settle.stderr).toMatch(/facilitator: settle: chain_unavailable: [^\n]+\n$/);
  });

  it("--rpc-url wins over FACILITATOR_RPC_URL and takes comma-separated values", async () => {
    const file = await writeJson("two-rpcs.json", await sample(1));
    const env = { FACILITATOR_RPC_URL: "http://127.0.0.1:1" };
    const runs = await Promise.all([
      cli(["verify", file, "--rpc-url", devnet.rpcUrl], { env }),
      cli(["verify", file, "--rpc-url", `http://127.0.0.1:1,${devnet.rpcUrl}`], { env }),
      cli(["verify", file, "--rpc-url", "http://127.0.0.1:1", "--rpc-url", devnet.rpcUrl], { env }),
    ]);
    for (const run of runs) {
      expectExit(run, 0);
      expect(json(run)).toEqual({ success: true, payer: payer(1).address });
    }
  });
});

describe("usage", () => {
  it("an unknown flag or a bad --wait-until exits 2", async () => {
    const file = await writeJson("usage.json", await sample(0));
    const runs = await Promise.all([
      cli(["verify", file, "--no-such-flag"]),
      cli(["settle", file, "--wait-until", "bogus"]),
      cli(["verify", file, "--rpc-url", "ws://127.0.0.1:8545"]),
      cli(["settle", file, "--confirm-timeout", "soon"]),
      cli(["settle", file, "--amount", "0.5"]),
      cli(["no-such-command"]),
    ]);
    for (const run of runs) expectExit(run, 2);
    expect(runs[1]?.stderr).toMatch(/wait-until/);
  });

  it("no command at all exits 2 with the help on stderr and one invalid_request on stdout", async () => {
    const run = await cli([]);
    expectExit(run, 2);
    expect(JSON.parse(run.stdout)).toMatchObject({ success: false, error: "invalid_request" });
    expect(run.stderr).toMatch(/Usage: facilitator/);
  });

  it("--help of verify and settle exits 0 and shows an example", async () => {
    const runs = await Promise.all([cli(["verify", "--help"]), cli(["settle", "--help"])]);
    for (const run of runs) {
      expectExit(run, 0);
      expect(run.stdout).toContain("Example");
      expect(run.stdout).toContain("Exit status");
    }
    expect(runs[1]?.stdout).toContain("--wait-until");
  });
});

describe("settle", () => {
  it("--wait-until confirmed moves exactly the amount, once", async () => {
    const request = await sample(0);
    const file = await writeJson("settle-confirmed.json", request);
    const before = await balanceOf(devnet.payee.address);

    const first = await cli(["settle", file, "--wait-until", "confirmed"]);
    expectExit(first, 0);
    const body = json(first);
    expect(body).toEqual({
      success: true,
      transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(first.stderr).toBe("");
    const receipt = await publicClient().getTransactionReceipt({
      hash: body.transactionHash as Hash,
    });
    expect(receipt.status).toBe("success");
    const after = await balanceOf(devnet.payee.address);
    expect(after - before).toBe(10_000n);

    const second = await cli(["settle", file, "--wait-until", "confirmed"]);
    expectExit(second, 1);
    expect(json(second)).toMatchObject({ success: false, error: "nonce_already_used" });
    expect(await balanceOf(devnet.payee.address)).toBe(after);
  });

  it("settles an x402-dialect body from stdin, signed by the x402 client", async () => {
    const requirements = requirementsV2(devnet, { amount: "2500" });
    const payload = await clientPayload(payer(4), requirements);
    const body = JSON.stringify({
      x402Version: 2,
      paymentPayload: payload,
      paymentRequirements: requirements,
    });
    const before = await balanceOf(devnet.payee.address);
    const run = await cli(["settle", "-"], { stdin: body });
    expectExit(run, 0);
    expect(json(run)).toEqual({
      success: true,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      network: devnet.network,
      payer: payer(4).address,
    });
    expect(await balanceOf(devnet.payee.address)).toBe(before + 2_500n);
  });

  it("--wait-until simulated prints a hash and moves no money", async () => {
    const file = await writeJson("settle-simulated.json", await sample(1));
    const before = await balanceOf(devnet.payee.address);
    const run = await cli(["settle", file, "--wait-until", "simulated"]);
    expectExit(run, 0);
    expect(json(run)).toEqual({
      success: true,
      transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(await balanceOf(devnet.payee.address)).toBe(before);
    // Nothing was spent: the same authorization still verifies.
    expectExit(await cli(["verify", file]), 0);
  });

  it("a body's own waitUntil holds unless --wait-until is given", async () => {
    const request = { ...(await sample(2)), waitUntil: "simulated" };
    const file = await writeJson("settle-body-simulated.json", request);
    const before = await balanceOf(devnet.payee.address);
    const run = await cli(["settle", file]);
    expectExit(run, 0);
    expect(json(run)).toMatchObject({ success: true });
    expect(await balanceOf(devnet.payee.address)).toBe(before);
    expectExit(await cli(["verify", file]), 0);
    // The flag wins over the body.
    const confirmed = await cli(["settle", file, "--wait-until", "confirmed"]);
    expectExit(confirmed, 0);
    expect(await balanceOf(devnet.payee.address)).toBe(before + 10_000n);
  });

  it("without any key exits 2 (configuration) with settlement_failed and sends nothing", async () => {
    const file = await writeJson("settle-no-key.json", await sample(3));
    const before = await balanceOf(devnet.payee.address);
    const run = await cli(["settle", file], { env: { FACILITATOR_PRIVATE_KEY: undefined } });
    expectExit(run, 2);
    expect(json(run)).toMatchObject({ success: false, error: "settlement_failed" });
    expect(await balanceOf(devnet.payee.address)).toBe(before);
  });

  it("a malformed key, in a file or the environment, exits 2 and is never echoed", async () => {
    const content = `0x${"5eed".repeat(15)}zzzz`;
    const keyFile = path.join(dir, "malformed.key");
    await writeFile(keyFile, `${content}\n`, { mode: 0o600 });
    const file = await writeJson("settle-bad-key.json", await sample(3));
    const bareHex = facilitatorKey.slice(2);
    const runs = await Promise.all([
      cli(["settle", file, "--private-key-file", keyFile]),
      cli(["settle", file], {
        env: { FACILITATOR_PRIVATE_KEY: undefined, FACILITATOR_PRIVATE_KEY_FILE: keyFile },
      }),
      // The real key, one character short: still never printed.
      cli(["settle", file], { env: { FACILITATOR_PRIVATE_KEY: facilitatorKey.slice(0, -1) } }),
      cli(["settle", file], { env: { FACILITATOR_PRIVATE_KEY: `${bareHex}${bareHex}` } }),
    ]);
    for (const run of runs) {
      expectExit(run, 2);
      for (const text of [run.stdout, run.stderr]) {
        expect(text).not.toContain(content);
        expect(text).not.toContain("5eed5eed");
      }
    }
  });

  it("a key file that is fine settles (--private-key-file over the environment)", async () => {
    const keyFile = path.join(dir, "good.key");
    await writeFile(keyFile, `${facilitatorKey}\n`, { mode: 0o600 });
    const file = await writeJson("settle-key-file.json", await sample(3));
    const run = await cli(["settle", file, "--private-key-file", keyFile], {
      env: { FACILITATOR_PRIVATE_KEY: "not a key at all" },
    });
    expectExit(run, 0);
    expect(json(run)).toMatchObject({ success: true });
  });
});

describe("devnet subcommand", () => {
  const execFileAsync = promisify(execFile);

  function alive(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  /** Whether something accepts TCP connections on 127.0.0.1:port. */
  function listening(port: number): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = connect({ host: "127.0.0.1", port });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
  }

  it("its terminal closed (SIGHUP): the chain stops and its temporary directory goes", async () => {
    const child = spawnCli(["devnet", "--json", "--port", "0"], {
      env: { FACILITATOR_RPC_URL: undefined, FACILITATOR_PRIVATE_KEY: undefined },
    });
    const exited = new Promise<string>((resolve) =>
      child.once("exit", (code, signal) => resolve(`exit ${code ?? signal}`)),
    );
    let stderr = "";
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    let stdout = "";
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no JSON line")), 20_000);
      child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk;
        if (stdout.includes("\n")) {
          clearTimeout(timer);
          resolve(stdout.slice(0, stdout.indexOf("\n")));
        }
      });
    });
    const info = JSON.parse(line) as { request: string; rpcUrl: string };
    const dir = path.dirname(info.request);
    const port = Number(new URL(info.rpcUrl).port);
    expect(existsSync(dir)).toBe(true);
    child.kill("SIGHUP");
    const how = await exited;
    expect(existsSync(dir), `${dir} is left (${how}; ${stderr})`).toBe(false);
    expect(await listening(port), `port ${port} still answers`).toBe(false);
  }, 40_000);

  it("prints one JSON line, its request verifies, and SIGINT leaves no anvil", async () => {
    const devnetDir = await mkdtemp(path.join(os.tmpdir(), "facilitator-cli-devnet-"));
    // --port 0: a free port, so a devnet someone runs on 8545 is left alone and the port
    // checked below cannot be taken over by another developer's devnet meanwhile.
    const child = spawnCli(["devnet", "--json", "--dir", devnetDir, "--port", "0"], {
      env: { FACILITATOR_RPC_URL: undefined, FACILITATOR_PRIVATE_KEY: undefined },
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    let stdout = "";
    let stderr = "";
    child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    let anvilPids: number[] = [];
    try {
      const line = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no JSON line; stderr: ${stderr}`)),
          20_000,
        );
        child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
          stdout += chunk;
          const end = stdout.indexOf("\n");
          if (end >= 0) {
            clearTimeout(timer);
            resolve(stdout.slice(0, end));
          }
        });
        child.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`devnet exited (${code}) early; stderr: ${stderr}`));
        });
      });
      const info = JSON.parse(line) as Record<string, string>;
      expect(info.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(info.request).toBe(path.join(devnetDir, "request.json"));
      expect(info.requestX402).toBe(path.join(devnetDir, "request-x402.json"));
      expect(info.requestPermit2).toBe(path.join(devnetDir, "request-permit2.json"));
      expect(info.requestPermit2Eip2612).toBe(path.join(devnetDir, "request-permit2-eip2612.json"));
      expect(info.requestPermit).toBe(path.join(devnetDir, "request-permit.json"));
      const devnetJson = JSON.parse(await readFile(path.join(devnetDir, "devnet.json"), "utf8"));
      expect(devnetJson).toMatchObject({
        permit2: "0x000000000022D473030F116dDEE9F6B43aC78BA3",
        exactPermit2Proxy: "0x402085c248EeA27D92E8b30b2C58ed07f9E20001",
        uptoPermit2Proxy: "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002",
        permitToken: { name: "Permit Token", version: "1", decimals: 6 },
        plainToken: { name: "Plain Token", decimals: 6 },
        walletFactory: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
        requests: { permit2: info.requestPermit2, permit2Eip2612: info.requestPermit2Eip2612 },
      });
      expect(info.keyFile).toEqual(expect.any(String));
      const port = Number(new URL(info.rpcUrl).port);

      // anvil is the devnet process's child.
      const { stdout: pgrep } = await execFileAsync("pgrep", ["-P", String(child.pid), "anvil"]);
      anvilPids = pgrep.split(/\s+/).filter(Boolean).map(Number);
      expect(anvilPids.length).toBe(1);

      const env = { FACILITATOR_RPC_URL: info.rpcUrl };
      const [reference, x402] = await Promise.all([
        cli(["verify", info.request], { env }),
        cli(["verify", info.requestX402], { env }),
      ]);
      expectExit(reference, 0);
      expect(json(reference)).toMatchObject({ success: true });
      expectExit(x402, 0);
      expect(json(x402)).toMatchObject({ isValid: true });
      // The Permit2 request files verify and settle too (one with an approval, one sponsored).
      for (const file of [
        info.requestPermit2,
        info.requestPermit2Eip2612,
        info.requestPermit,
        info.requestPermit2Approval,
      ]) {
        const verified = await cli(["verify", file as string], { env });
        expectExit(verified, 0);
        const settled = await cli(
          ["settle", file as string, "--private-key-file", info.keyFile as string],
          { env },
        );
        expectExit(settled, 0);
        expect(json(settled)).toMatchObject({ success: true });
      } // upto: settle charges what was used, at most what was signed for.
      const upto = await cli(
        [
          "settle",
          info.requestUpto as string,
          "--amount",
          "4200",
          "--private-key-file",
          info.keyFile as string,
        ],
        { env },
      );
      expectExit(upto, 0);
      expect(json(upto)).toMatchObject({ success: true, amount: "4200" });

      // batch-settlement: the voucher needs the deposit first; then it verifies, with the
      // channel's balance, and the deposit settled again is refused.
      const early = await cli(["verify", info.requestBatchVoucher as string], { env });
      expectExit(early, 1);
      expect(json(early)).toMatchObject({
        invalidReason: "invalid_batch_settlement_evm_channel_not_found",
      });
      const deposited = await cli(
        [
          "settle",
          info.requestBatchDeposit as string,
          "--private-key-file",
          info.keyFile as string,
        ],
        { env },
      );
      expectExit(deposited, 0);
      expect(json(deposited)).toMatchObject({ success: true, amount: "50000" });
      const voucher = await cli(["verify", info.requestBatchVoucher as string], { env });
      expectExit(voucher, 0);
      expect(json(voucher)).toMatchObject({ isValid: true, extra: { balance: "50000" } });

      // The key file holds the facilitator key; it appears in none of the devnet's output.
      const keyFileText = await readFile(info.keyFile, "utf8");
      expectNoKey(stdout, keyFileText);
      expectNoKey(stderr, keyFileText);

      child.kill("SIGINT");
      expect(await exited).toEqual({ code: 0, signal: null });
      expect(stdout.trim().split("\n")).toHaveLength(1);
      for (const pid of anvilPids) expect(alive(pid)).toBe(false);
      expect(await listening(port)).toBe(false);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGINT");
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
        child.kill("SIGKILL");
      }
      // Never leave an anvil behind, whatever failed above.
      for (const pid of anvilPids) if (alive(pid)) process.kill(pid, "SIGKILL");
      await rm(devnetDir, { recursive: true, force: true });
    }
  });
});

describe("the settlement key", () => {
  it("appeared in no output of any run above", () => {
    expect(outputs.length).toBeGreaterThan(20);
    for (const text of outputs) expectNoKey(text);
  });
});
