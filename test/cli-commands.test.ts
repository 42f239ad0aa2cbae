/**
 * The built CLI end to end for pay, doctor and usage errors, against one devnet: `pay | settle -`
 * is a whole payment, doctor exits by its worst finding, and every usage error still prints one
 * JSON document on stdout.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createPublicClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AnvilInstance,
  type Devnet,
  startAnvil,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { tokenBalance } from "./helpers/chain.js";
import { startServe } from "./helpers/serve.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BIN = path.join(ROOT, "bin", "facilitator.js");

let devnet: Devnet;
let plainChain: AnvilInstance;
let dir: string;
let devnetEnv: Record<string, string>;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { FORCE_COLOR: "0" };
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("FACILITATOR_")) env[name] = value;
  }
  return { ...env, ...extra };
}

function finish(child: ChildProcess, stdin?: string): Promise<Run> {
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => {
    stdout += s;
  });
  child.stderr?.setEncoding("utf8").on("data", (s: string) => {
    stderr += s;
  });
  if (stdin !== undefined) child.stdin?.end(stdin);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no exit in 25 s; stderr: ${stderr}`));
    }, 25_000);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The CLI with the devnet's devnet.env applied (RPC, settlement key file, journal). */
function cli(args: string[], env: Record<string, string> = devnetEnv, stdin?: string) {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: baseEnv(env),
    stdio: [stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  return finish(child, stdin);
}

/** A shell pipeline of CLI runs, as a user types it. */
function pipeline(command: string, env: Record<string, string> = devnetEnv) {
  const child = spawn(
    "sh",
    ["-c", command.replaceAll("facilitator ", `"${process.execPath}" "${BIN}" `)],
    {
      cwd: ROOT,
      env: baseEnv(env),
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  return finish(child);
}

function json(run: Run): Record<string, unknown> {
  try {
    return JSON.parse(run.stdout) as Record<string, unknown>;
  } catch {
    throw new Error(
      `stdout is not one JSON document (exit ${run.code}):\n${run.stdout}\n${run.stderr}`,
    );
  }
}

beforeAll(async () => {
  [devnet, plainChain, dir] = await Promise.all([
    startDevnet(),
    startAnvil({ chainId: 1337 }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-cli-commands-")),
  ]);
  const keyFile = path.join(dir, "facilitator.key");
  await writeFile(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
  devnetEnv = {
    FACILITATOR_RPC_URL: devnet.rpcUrl,
    FACILITATOR_PRIVATE_KEY_FILE: keyFile,
    FACILITATOR_JOURNAL: path.join(dir, "journal.jsonl"),
  };
}, 60_000);

afterAll(async () => {
  await Promise.all([devnet?.stop(), plainChain?.stop()]);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("pay", () => {
  it("pay --amount 0.01 | settle - is a whole payment on a devnet", async () => {
    const before = await tokenBalance(devnet, devnet.payee.address);
    const run = await pipeline("facilitator pay --amount 0.01 | facilitator settle -");
    expect(run.code, run.stderr).toBe(0);
    expect(json(run)).toEqual({ success: true, transactionHash: expect.stringMatching(/^0x/) });
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(before + 10_000n);
  });

  it("prints the reference dialect by default, the x402 one with --x402", async () => {
    const [reference, x402] = await Promise.all([
      cli(["pay", "--amount", "0.5", "--payer", "2"]),
      cli(["pay", "--x402", "--payer", "2"]),
    ]);
    expect(reference.code, reference.stderr).toBe(0);
    const body = json(reference);
    expect(body.requirements).toMatchObject({
      scheme: "exact",
      network: devnet.network,
      amount: "500000",
      asset: devnet.token.address,
      payTo: devnet.payee.address,
      extra: { name: "USDC", version: "2" },
    });
    expect(json(x402)).toMatchObject({ x402Version: 2, paymentRequirements: { amount: "10000" } });
    const verified = await cli(["verify", "-"], devnetEnv, reference.stdout);
    expect(json(verified)).toEqual({ success: true, payer: devnet.payers[1]?.address });
  });

  it("--method permit2 signs the payer's EIP-2612 permit when it has not approved Permit2", async () => {
    const run = await cli(["pay", "--method", "permit2", "--payer", "3", "--x402"]);
    expect(run.code, run.stderr).toBe(0);
    const body = json(run) as { paymentPayload: { extensions?: Record<string, unknown> } };
    expect(body.paymentPayload.extensions?.eip2612GasSponsoring).toBeDefined();
    const settled = await cli(["settle", "-"], devnetEnv, run.stdout);
    expect(json(settled)).toMatchObject({ success: true, network: devnet.network });
  });

  it("--method permit2 --approval carries the payer's signed approve transaction instead", async () => {
    const run = await cli([
      "pay",
      "--method",
      "permit2",
      "--approval",
      "--asset",
      devnet.plainToken.address,
      "--payer",
      "5",
    ]);
    expect(run.code, run.stderr).toBe(0);
    const body = json(run) as { payload: { extensions?: Record<string, unknown> } };
    expect(body.payload.extensions?.erc20ApprovalGasSponsoring).toBeDefined();
    const settled = await cli(["settle", "-"], devnetEnv, run.stdout);
    expect(json(settled)).toMatchObject({ success: true });
    const misuse = await cli(["pay", "--approval"]);
    expect(misuse.code).toBe(2);
  });

  it("--requirements takes a 402 answer, and --payer-key-file a payer of one's own", async () => {
    const requirementsFile = path.join(dir, "402.json");
    const payer = devnet.payers[3];
    if (!payer) throw new Error("no payer 4");
    await writeFile(
      requirementsFile,
      JSON.stringify({
        x402Version: 2,
        accepts: [
          { scheme: "upto", network: devnet.network },
          {
            scheme: "exact",
            network: devnet.network,
            amount: "1234",
            asset: devnet.token.address,
            payTo: devnet.payee.address,
            maxTimeoutSeconds: 60,
            extra: { name: "USDC", version: "2" },
          },
        ],
      }),
    );
    const keyFile = path.join(dir, "payer.key");
    await writeFile(keyFile, `${payer.privateKey}\n`, { mode: 0o600 });
    const run = await pipeline(
      `facilitator pay --requirements ${requirementsFile} --payer-key-file ${keyFile} | facilitator verify -`,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(json(run)).toEqual({ success: true, payer: payer.address });
    expect(run.stdout + run.stderr).not.toContain(payer.privateKey.slice(2, 18));
  });

  it("off a devnet it asks for what a devnet would have filled in, as usage errors", async () => {
    const env = { FACILITATOR_RPC_URL: plainChain.rpcUrl };
    const runs = await Promise.all([
      cli(["pay", "--amount", "1"], env),
      cli(
        [
          "pay",
          "--payer",
          "1",
          "--to",
          devnet.payee.address,
          "--asset",
          devnet.token.address,
          "--amount",
          "1",
        ],
        env,
      ),
      cli(["pay", "--payer", "9"]),
      cli(["pay", "--amount", "lots"]),
    ]);
    for (const run of runs) {
      expect(run.code, run.stdout).toBe(2);
      expect(json(run)).toMatchObject({ success: false, error: "invalid_request" });
      expect(run.stderr.startsWith("facilitator: ")).toBe(true);
    }
    expect(json(runs[0] as Run).message).toContain("--asset is needed");
    expect(json(runs[1] as Run).message).toContain("no devnet");
  });

  it("an unreachable RPC is chain_unavailable, exit 3", async () => {
    const run = await cli(["pay"], { FACILITATOR_RPC_URL: "http://127.0.0.1:1" });
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(json(run)).toMatchObject({ success: false, error: "chain_unavailable" });
  });
});

describe("doctor", () => {
  it("says all is well against a devnet, in JSON with --json", async () => {
    const run = await cli(["doctor", "--json"]);
    expect(run.code, run.stdout).toBe(0);
    const report = json(run) as {
      ok: boolean;
      findings: { area: string; level: string; message: string }[];
    };
    expect(report.ok).toBe(true);
    const rpc = report.findings.find((f) => f.area === "rpc");
    expect(rpc?.message).toContain(`serves ${devnet.network} (a facilitator devnet)`);
    expect(
      report.findings.some((f) => f.area === "tokens" && f.message.includes("EIP-3009 ok")),
    ).toBe(true);
    expect(run.stdout).not.toContain(devnet.facilitator.privateKey.slice(2, 18));
    // The caps in force: the fee cap (the default here), the gas bounds and the wasted-gas budget.
    const limits = report.findings.find((f) => f.area === "limits");
    expect(limits?.level).toBe("ok");
    expect(limits?.message).toContain(
      `${devnet.network}: a settlement may cost up to 0.01 of the native token (the default)`,
    );
    expect(limits?.message).toContain("gas at most 120,000 for EIP-3009");
    expect(limits?.message).toContain("wasted gas budget 500,000 per hour");
  });

  it("warns when today's gas price puts an ordinary settle over the fee cap, and says how to raise it", async () => {
    const run = await cli(["doctor", "--json", "--max-fee", `${devnet.network}=0.000000001`]);
    expect(run.code, run.stdout).toBe(1);
    const report = json(run) as {
      findings: { area: string; level: string; message: string; fix?: string }[];
    };
    const limits = report.findings.find((f) => f.area === "limits");
    expect(limits?.level).toBe("warning");
    expect(limits?.message).toContain("(configured)");
    expect(limits?.message).toMatch(/over the cap, settles are refused \(fee_cap_exceeded\)/);
    expect(limits?.fix).toContain(`--max-fee ${devnet.network}=<amount>`);
  });

  it("exits by the worst finding: 1 no key, 2 a bad config file, 3 an RPC down", async () => {
    const badConfig = path.join(dir, "bad-config.json");
    await writeFile(badConfig, JSON.stringify({ rpcUrl: [devnet.rpcUrl] }));
    const [noKey, config, down] = await Promise.all([
      cli(["doctor"], {
        FACILITATOR_RPC_URL: devnet.rpcUrl,
        FACILITATOR_JOURNAL: devnetEnv.FACILITATOR_JOURNAL as string,
      }),
      cli(["doctor", "--json", "--config", badConfig]),
      cli(["doctor", "--json", "--rpc-url", "http://127.0.0.1:1"]),
    ]);
    expect(noKey.code, noKey.stdout).toBe(1);
    expect(noKey.stdout).toContain("no settlement key");
    expect(config.code, config.stdout).toBe(2);
    expect(JSON.stringify(json(config))).toContain(
      'unknown key \\"rpcUrl\\" (did you mean rpcUrls?)',
    );
    expect(down.code, down.stdout).toBe(3);
  });
});

describe("usage errors", () => {
  it("print one JSON invalid_request on stdout and one prefixed line on stderr, exit 2", async () => {
    const runs = await Promise.all([
      cli(["verify", "--no-such-flag"]),
      cli(["settle", "--private-key", "0xabc"]),
      cli(["serve", "--port", "not-a-port"]),
      cli(["no-such-command"]),
    ]);
    for (const run of runs) {
      expect(run.code).toBe(2);
      expect(json(run)).toMatchObject({ success: false, error: "invalid_request" });
      expect(run.stderr.split("\n").filter(Boolean)).toHaveLength(1);
      expect(run.stderr.startsWith("facilitator: ")).toBe(true);
    }
    expect(json(runs[1] as Run).message).toContain(
      "use --private-key-file FILE or FACILITATOR_PRIVATE_KEY",
    );
    expect(runs[1]?.stderr).not.toContain("0xabc");
  });

  it("configuration the payment needs exits 2: no settlement key, no RPC for its chain", async () => {
    const request = await cli(["pay"]);
    const noKey = await cli(
      ["settle", "-"],
      {
        FACILITATOR_RPC_URL: devnet.rpcUrl,
        FACILITATOR_JOURNAL: devnetEnv.FACILITATOR_JOURNAL as string,
      },
      request.stdout,
    );
    expect(noKey.code, noKey.stdout).toBe(2);
    expect(json(noKey)).toMatchObject({ error: "settlement_failed" });
    const otherChain = await cli(
      ["verify", "-"],
      { FACILITATOR_RPC_URL: plainChain.rpcUrl },
      request.stdout,
    );
    expect(otherChain.code, otherChain.stdout).toBe(2);
    expect(json(otherChain)).toMatchObject({ error: "unsupported_network" });
    // stderr is no terminal here (CI): each failure still says why, in one line.
    expect(noKey.stderr).toMatch(/^facilitator: settle: settlement_failed: .+\n$/m);
    expect(otherChain.stderr).toMatch(/^facilitator: verify: unsupported_network: .+\n$/m);
  });
});

describe("devnet", () => {
  it("keeps its own journal, exports it in devnet.env, and removes its temporary directory on exit", async () => {
    const child = spawn(process.execPath, [BIN, "devnet", "--json", "--port", "0"], {
      cwd: ROOT,
      env: baseEnv({}),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const closed = finish(child);
    let line = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      line += chunk.toString("utf8");
    });
    const deadline = Date.now() + 30_000;
    while (!line.includes("\n") && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    try {
      const info = JSON.parse(line.split("\n")[0] ?? "") as Record<string, string>;
      expect(info.journal).toBe(path.join(info.dir as string, "journal.jsonl"));
      const env = readFileSync(info.envFile as string, "utf8");
      expect(env).toContain(`export FACILITATOR_JOURNAL='${info.journal}'`);
      expect(env).toContain(`export FACILITATOR_RPC_URL='${info.rpcUrl}'`);
      // The well-known devnet key is locked per devnet, not across every devnet on the machine.
      expect(env).toContain(
        `export FACILITATOR_LOCK_DIR='${path.join(info.dir as string, "locks")}'`,
      );
      const devnetJson = JSON.parse(
        readFileSync(path.join(info.dir as string, "devnet.json"), "utf8"),
      );
      const genesis = await createPublicClient({ transport: http(info.rpcUrl) }).getBlock({
        blockNumber: 0n,
      });
      expect(devnetJson.genesisHash).toBe(genesis.hash);
      child.kill("SIGINT");
      expect((await closed).code).toBe(0);
      expect(existsSync(info.dir as string)).toBe(false);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("a --port that is taken is a usage error that says so", async () => {
    const port = Number(new URL(devnet.rpcUrl).port);
    const run = await cli(["devnet", "--port", String(port)], {});
    expect(run.code, run.stdout).toBe(2);
    expect(json(run).message).toContain(`--port ${port} is taken`);
  });
});

describe("serve", () => {
  it("on a port that is taken says so and how to get another, not only EADDRINUSE", async () => {
    const port = Number(new URL(devnet.rpcUrl).port);
    const run = await cli(["serve", "--port", String(port)], {
      FACILITATOR_RPC_URL: devnet.rpcUrl,
    });
    expect(run.code, run.stdout).toBe(2);
    const message = json(run).message as string;
    expect(message).toContain(`--port ${port} is taken`);
    expect(message).toContain("pick another, or --port 0 for a free one");
  });

  it("reconcile while serve holds the key says serve reconciles by itself, not to POST /settle", async () => {
    const env = { ...devnetEnv, FACILITATOR_JOURNAL: path.join(dir, "serve-journal.jsonl") };
    const serving = await startServe([], env);
    try {
      const run = await cli(["reconcile"], env);
      expect(run.code, run.stdout).toBe(2);
      const answer = json(run);
      expect(answer.error).toBe("key_in_use");
      const message = answer.message as string;
      expect(message).toContain("that serve reconciles by itself");
      expect(message).toContain("stop that serve first");
      expect(message).not.toContain("send this payment");
    } finally {
      serving.child.kill("SIGTERM");
      await serving.exited;
    }
  });
});
