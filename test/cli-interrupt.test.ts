/**
 * Ctrl-C: settle answers at once with one JSON document (interrupted before a broadcast,
 * settlement_pending with the hash after it), exits 130 and leaves the terminal as it found it;
 * serve says what it waits for on the first Ctrl-C and stops on the second. And a devnet's
 * journal is refused against another devnet. Blocks are mined by hand here, so a settle waits.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createTestClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { send, startServe, waitForStderr } from "./helpers/serve.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = path.join(ROOT, "bin", "facilitator.js");

let devnet: Devnet;
let dir: string;
let keyFile: string;
/** Accepts connections and never answers: an RPC that hangs. */
let silent: Server;
let silentUrl: string;

const mine = () =>
  createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { FORCE_COLOR: "0" };
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("FACILITATOR_")) base[name] = value;
  }
  return { ...base, FACILITATOR_PRIVATE_KEY_FILE: keyFile, ...extra };
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("close", (code) => resolve(code)));
}

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet({ mining: "manual" }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-interrupt-")),
  ]);
  keyFile = path.join(dir, "facilitator.key");
  await writeFile(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
  silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  const address = silent.address();
  silentUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}, 60_000);

afterAll(async () => {
  silent?.close();
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function requestFile(name: string, payer: number): Promise<string> {
  const account = devnet.payers[payer];
  if (!account) throw new Error(`no payer ${payer}`);
  const file = path.join(dir, name);
  await writeFile(file, JSON.stringify(await signSampleRequest(devnet, { payer: account })));
  return file;
}

describe("settle and Ctrl-C", () => {
  it("through a terminal: interrupted, exit 130, the terminal still cooked (not raw)", async () => {
    const request = await requestFile("hang.json", 0);
    const out = path.join(dir, "hang-out.json");
    // script(1) gives the CLI a pseudo-terminal: the spinner runs, and ^C is the terminal's.
    const inner = `stty cols 80 rows 24; "${process.execPath}" "${BIN}" settle "${request}" --rpc-url ${silentUrl} > "${out}"; echo "EXIT=$?"; stty -a`;
    const child = spawn("script", ["-qec", inner, "/dev/null"], {
      // script(1) runs the line in $SHELL. dash (Debian's sh, CI has no SHELL) dies of the ^C
      // itself before echoing; bash waits for a child that handled it, as an interactive shell does.
      env: env({ FACILITATOR_JOURNAL: path.join(dir, "hang-journal.jsonl"), SHELL: "/bin/bash" }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let text = "";
    child.stdout?.setEncoding("utf8").on("data", (s: string) => {
      text += s;
    });
    const done = exited(child);
    expect(await until(() => text.includes("settling"), 10_000), text).toBe(true);
    child.stdin?.write("\u0003");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await done;
    clearTimeout(timer);
    child.stdin?.destroy();
    expect(text).toContain("EXIT=130");
    expect(JSON.parse(readFileSync(out, "utf8"))).toMatchObject({
      success: false,
      error: "interrupted",
    });
    // ora would have left stdin raw (-icanon -echo) had it owned it when the process exited.
    expect(text).toMatch(/(^|\s)icanon(\s|$)/m);
    expect(text).toMatch(/(^|\s)echo(\s|$)/m);
  });

  it("after the broadcast: settlement_pending with the hash, and a retry follows it", async () => {
    const request = await requestFile("pending.json", 1);
    const journal = path.join(dir, "pending-journal.jsonl");
    const child = spawn(process.execPath, [BIN, "settle", request], {
      env: env({ FACILITATOR_RPC_URL: devnet.rpcUrl, FACILITATOR_JOURNAL: journal }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout?.setEncoding("utf8").on("data", (s: string) => {
      stdout += s;
    });
    const done = exited(child);
    const sent = () => existsSync(journal) && readFileSync(journal, "utf8").includes('"t":"send"');
    expect(await until(sent, 15_000)).toBe(true);
    await new Promise((r) => setTimeout(r, 200)); // the broadcast follows the journal record
    const started = Date.now();
    child.kill("SIGINT");
    expect(await done).toBe(130);
    expect(Date.now() - started).toBeLessThan(3_000);
    const body = JSON.parse(stdout) as Record<string, string>;
    expect(body).toMatchObject({ success: false, error: "settlement_pending" });
    expect(body.transactionHash).toMatch(/^0x[0-9a-f]{64}$/);

    await mine();
    const retry = spawn(process.execPath, [BIN, "settle", request], {
      env: env({ FACILITATOR_RPC_URL: devnet.rpcUrl, FACILITATOR_JOURNAL: journal }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let again = "";
    retry.stdout?.setEncoding("utf8").on("data", (s: string) => {
      again += s;
    });
    expect(await exited(retry)).toBe(0);
    expect(JSON.parse(again)).toEqual({ success: true, transactionHash: body.transactionHash });
  });
});

describe("serve and Ctrl-C", () => {
  it("the first says what it waits for, the second stops now (exit 130)", async () => {
    const journal = path.join(dir, "serve-journal.jsonl");
    const serving = await startServe(["--journal", journal], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY_FILE: keyFile,
    });
    try {
      const account = devnet.payers[2];
      if (!account) throw new Error("no payer 2");
      const body = JSON.stringify(await signSampleRequest(devnet, { payer: account }));
      const answer = send(serving.url, { path: "/settle", body });
      const sent = () =>
        existsSync(journal) && readFileSync(journal, "utf8").includes('"t":"send"');
      expect(await until(sent, 15_000)).toBe(true);
      serving.child.kill("SIGINT");
      expect(await waitForStderr(serving, /"event":"stopping".*"\/settle":1/, 5_000)).toBe(true);
      const started = Date.now();
      serving.child.kill("SIGINT");
      expect(await serving.exited).toBe(130);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(serving.stderr()).toContain('"event":"stopped_now"');
      expect((await answer).error).toBeDefined(); // its connection was cut
    } finally {
      serving.child.kill("SIGKILL");
    }
  });
});

describe("a devnet's journal and another devnet", () => {
  it("is refused as a configuration error naming the journal", async () => {
    const old = path.join(dir, "old-devnet");
    await mkdir(old, { recursive: true });
    await writeFile(
      path.join(old, "devnet.json"),
      JSON.stringify({ chainId: devnet.chainId, genesisHash: `0x${"ab".repeat(32)}` }),
    );
    const request = await requestFile("old.json", 3);
    const child = spawn(process.execPath, [BIN, "settle", request], {
      env: env({
        FACILITATOR_RPC_URL: devnet.rpcUrl,
        FACILITATOR_JOURNAL: path.join(old, "journal.jsonl"),
      }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout?.setEncoding("utf8").on("data", (s: string) => {
      stdout += s;
    });
    expect(await exited(child)).toBe(2);
    const body = JSON.parse(stdout) as Record<string, string>;
    expect(body.error).toBe("invalid_request");
    expect(body.message).toContain(
      `the journal ${path.join(old, "journal.jsonl")} belongs to the devnet`,
    );
  });

  it("a devnet's request file read against another devnet is answered, with a note on stderr", async () => {
    const old = path.join(dir, "old-devnet");
    const request = path.join(old, "request.json");
    const account = devnet.payers[4];
    if (!account) throw new Error("no payer 5");
    await writeFile(request, JSON.stringify(await signSampleRequest(devnet, { payer: account })));
    const child = spawn(process.execPath, [BIN, "verify", request], {
      env: env({ FACILITATOR_RPC_URL: devnet.rpcUrl }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.setEncoding("utf8").on("data", (s: string) => {
      stdout += s;
    });
    child.stderr?.setEncoding("utf8").on("data", (s: string) => {
      stderr += s;
    });
    expect(await exited(child)).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ success: true, payer: account.address });
    expect(stderr).toContain(
      `${request} was signed for the devnet whose genesis block is 0xabababab…`,
    );
  });
});
