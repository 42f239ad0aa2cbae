/**
 * Issue 9, CLI inputs: request files, stdin, key files, the config file and the API key file are
 * read with a size limit and, for pipes, FIFOs and devices, an idle timeout. `/dev/zero` is "too
 * large", a FIFO with no writer and stdin that never sends are errors after the timeout (set to
 * 1 s here with FACILITATOR_INPUT_TIMEOUT), and process substitution keeps working. Runs the built
 * CLI (`bin/facilitator.js`) as a subprocess against a devnet; every run is bounded to 20 s.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { open } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = path.join(ROOT, "bin", "facilitator.js");

let devnet: Devnet;
let dir: string;
let keyFile: string;

beforeAll(async () => {
  devnet = await startDevnet();
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-input-test-"));
  keyFile = path.join(dir, "facilitator.key");
  writeFileSync(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
});

afterAll(async () => {
  await devnet?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** The environment without FACILITATOR_*, with the devnet's RPC and a 1 s input timeout. */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("FACILITATOR_")),
  );
  return {
    ...base,
    FORCE_COLOR: "0",
    FACILITATOR_RPC_URL: devnet.rpcUrl,
    FACILITATOR_INPUT_TIMEOUT: "1",
    FACILITATOR_JOURNAL: path.join(dir, "journal"),
    ...extra,
  };
}

/** Runs a command to its end (killed after 20 s); `feed` may write to the child meanwhile. */
function run(
  command: string,
  args: string[],
  options: {
    stdin?: "ignore" | "pipe" | number;
    env?: NodeJS.ProcessEnv;
    feed?: (c: ChildProcess) => void;
  },
): Promise<Run> {
  const started = Date.now();
  const child = spawn(command, args, {
    cwd: ROOT,
    env: options.env ?? env(),
    stdio: [options.stdin ?? "ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => {
    stdout += s;
  });
  child.stderr?.setEncoding("utf8").on("data", (s: string) => {
    stderr += s;
  });
  options.feed?.(child);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${args.join(" ")} did not finish in 20 s`));
    }, 20_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

const cli = (args: string[], options: Parameters<typeof run>[2] = {}) =>
  run(process.execPath, [BIN, ...args], options);

/** A request problem: exit 2 and the documented invalid_request JSON on stdout. */
function expectInvalidRequest(result: Run, message: RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  const body = JSON.parse(result.stdout) as Record<string, unknown>;
  expect(body).toMatchObject({ success: false, error: "invalid_request" });
  expect(body.message).toMatch(message);
}

function fifo(name: string): string {
  const p = path.join(dir, name);
  execFileSync("mkfifo", [p]);
  return p;
}

/** Opens a FIFO for writing once a reader has it open (retrying for at most 10 s), writes, closes. */
async function writeWhenRead(p: string, text: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    try {
      const handle = await open(p, constants.O_WRONLY | constants.O_NONBLOCK);
      await handle.write(text);
      await handle.close();
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENXIO") throw error;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  throw new Error("nobody opened the FIFO for reading");
}

async function requestFile(name: string): Promise<string> {
  const payer = devnet.payers[0];
  if (!payer) throw new Error("no payer");
  const p = path.join(dir, name);
  writeFileSync(p, JSON.stringify(await signSampleRequest(devnet, { payer })));
  return p;
}

describe("request input", () => {
  it("/dev/zero as FILE or as stdin is too large, answered at once", async () => {
    const zero = openSync("/dev/zero", "r");
    try {
      const [asFile, asStdin] = await Promise.all([
        cli(["verify", "/dev/zero"]),
        cli(["verify"], { stdin: zero }),
      ]);
      expectInvalidRequest(asFile, /^cannot read \/dev\/zero: it is over the 1048576-byte limit/);
      expectInvalidRequest(asStdin, /^cannot read stdin: it is over the 1048576-byte limit/);
    } finally {
      closeSync(zero);
    }
  });

  it("a request file over 1 MiB is refused before it is read", async () => {
    const big = path.join(dir, "big.json");
    writeFileSync(big, `{"pad":"${"x".repeat(1024 * 1024)}"}`);
    expectInvalidRequest(await cli(["verify", big]), /over the 1048576-byte limit/);
  });

  it("a FIFO with no writer, and stdin that never sends, are errors after the timeout", async () => {
    const lonely = fifo("no-writer");
    const [fromFifo, fromStdin] = await Promise.all([
      cli(["verify", lonely]),
      // A pipe the test holds open and never writes to.
      cli(["verify", "-"], { stdin: "pipe" }),
    ]);
    for (const result of [fromFifo, fromStdin]) {
      expectInvalidRequest(result, /nothing arrived for 1 s/);
      expect(result.ms).toBeLessThan(10_000);
    }
  });

  it("a FIFO whose writer comes later is read, and verifies", async () => {
    const late = fifo("late-writer");
    const request = await requestFile("late.json");
    const text = readFileSync(request, "utf8");
    const result = await cli(["verify", late], {
      env: env({ FACILITATOR_INPUT_TIMEOUT: "10" }),
      feed: () => void setTimeout(() => void writeWhenRead(late, text), 300),
    });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ success: true });
  });
});

describe("key, config and API key files", () => {
  it("/dev/zero as a key or config file is a usage error naming the flag", async () => {
    const [key, config] = await Promise.all([
      cli(["settle", await requestFile("k.json"), "--private-key-file", "/dev/zero"]),
      cli(["verify", await requestFile("c.json"), "--config", "/dev/zero"]),
    ]);
    expect(key.code).toBe(2);
    expect(key.stderr).toMatch(/--private-key-file: it is over the 65536-byte limit/);
    expect(config.code).toBe(2);
    expect(config.stderr).toMatch(/config file \/dev\/zero: it is over the 65536-byte limit/);
  });

  it("a key file over the limit is refused without quoting it", async () => {
    const big = path.join(dir, "big.key");
    const secret = devnet.facilitator.privateKey.slice(2);
    writeFileSync(big, `${secret}\n`.repeat(2_000));
    const result = await cli(["settle", await requestFile("b.json"), "--private-key-file", big]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/over the 65536-byte limit/);
    expect(result.stderr + result.stdout).not.toContain(secret.slice(0, 16));
  });

  it("a key FIFO and an API key FIFO with no writer end after the timeout", async () => {
    const [key, apiKey] = await Promise.all([
      cli(["settle", await requestFile("f.json"), "--private-key-file", fifo("key-fifo")]),
      cli(["serve", "--port", "0", "--api-key-file", fifo("api-key-fifo")]),
    ]);
    expect(key.code).toBe(2);
    expect(key.stderr).toMatch(/--private-key-file: nothing arrived for 1 s/);
    expect(apiKey.code).toBe(2);
    expect(apiKey.stderr).toMatch(/--api-key-file: nothing arrived for 1 s/);
  });

  it("process substitution still works: --private-key-file <(cat key)", async () => {
    const request = await requestFile("ps.json");
    const result = await run(
      "bash",
      [
        "-c",
        'exec "$0" "$1" settle "$2" --wait-until simulated --private-key-file <(cat "$3")',
        process.execPath,
        BIN,
        request,
        keyFile,
      ],
      {},
    );
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ success: true });
  });
});
