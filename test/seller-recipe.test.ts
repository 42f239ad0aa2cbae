/**
 * docs/sellers.md as a new seller runs it (issue 39, "a seller in one recipe"): the page's code
 * blocks are written to files as they stand and run with node against `facilitator devnet
 * --chain-id 84532` and `facilitator serve` (the built CLI, started as the page says). The only
 * edits are the ports: the page's 4020 and 4021 become free ones, so the test can run beside
 * others. The buyer (the official @x402/fetch) pays the seller's `price: "$0.01"` through the
 * official Express and Hono middleware, and the payment is checked on chain.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { type Address, createPublicClient, erc20Abi, type Hex, http, parseEventLogs } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type DevnetProcess,
  ROOT,
  sourcedEnv,
  spawnCommand,
  spawnDevnet,
  stop,
  waitFor,
} from "./helpers/devnet-process.js";

const PAGE = readFileSync(path.join(ROOT, "docs", "sellers.md"), "utf8");
const FACILITATOR_URL = "http://127.0.0.1:4020";
const SELLER_PORT = "4021";

/** The page's ```js blocks, each named by the last `file.mjs` written before it. */
function codeFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const match of PAGE.matchAll(/^```js\n([\s\S]*?)^```$/gm)) {
    const before = PAGE.slice(0, match.index);
    const names = [...before.matchAll(/`([\w-]+\.mjs)`/g)];
    const name = names.at(-1)?.[1];
    if (!name) throw new Error("a js block in sellers.md has no file name before it");
    files.set(name, match[1] as string);
  }
  return files;
}

/** The packages of the `npm install` line nearest before `name`'s block. */
function installedFor(name: string): string[] {
  const at = PAGE.indexOf(`\`${name}\``);
  const installs = [...PAGE.slice(0, at).matchAll(/npm install ([^\n`)]+)/g)];
  return (installs.at(-1)?.[1] ?? "").trim().split(/\s+/);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

interface Stack {
  serveUrl: string;
  info: {
    rpcUrl: string;
    network: string;
    token: { address: Address };
    payee: Address;
    payers: Address[];
  };
  chain: ReturnType<typeof createPublicClient>;
}

/** `facilitator devnet ...args`, and `serve` with its devnet.env sourced, as the page says. */
async function startStack(args: string[]): Promise<Stack> {
  const devnet = spawnDevnet([...args, "--port", "0", "--json"]);
  devnets.push(devnet);
  const line = await waitFor(devnet, "\n", { ms: 30_000 });
  const { envFile } = JSON.parse(line) as { envFile: string };
  const info = JSON.parse(readFileSync(path.join(path.dirname(envFile), "devnet.json"), "utf8"));
  const serve = spawnCommand(["serve", "--port", "0"], await sourcedEnv(envFile));
  serves.push(serve);
  const listening = await waitFor(serve, '"event":"listening"', { stream: "stderr" });
  return {
    serveUrl: /"url":"([^"]+)"/.exec(listening)?.[1] ?? "",
    info,
    chain: createPublicClient({ transport: http(info.rpcUrl) }),
  };
}

const devnets: DevnetProcess[] = [];
const serves: DevnetProcess[] = [];
let baseSepolia: Stack;
let plain: Stack;
let work: string;
const files = codeFiles();

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "seller-recipe-"));
  // The recipe's `npm install`: this project's node_modules holds every package it names.
  symlinkSync(path.join(ROOT, "node_modules"), path.join(work, "node_modules"), "dir");
  const shell = PAGE.match(/^```sh\n([\s\S]*?)^```$/gm)?.join("\n") ?? "";
  expect(shell).toContain("npx facilitator devnet --chain-id 84532 ");
  expect(shell).toMatch(/source \S+devnet\.env/);
  expect(shell).toContain("npx facilitator serve ");
  [baseSepolia, plain] = await Promise.all([startStack(["--chain-id", "84532"]), startStack([])]);
}, 60_000);

afterAll(async () => {
  await Promise.all(serves.map(stop));
  await Promise.all(devnets.map(stop));
  if (work) rmSync(work, { recursive: true, force: true });
});

type Edit = (code: string) => string;

/** Writes the page's `name` with the two ports swapped for free ones (and `edit`, if any). */
function written(name: string, stack: Stack, sellerPort: number, edit: Edit = (c) => c): string {
  const code = files.get(name);
  if (code === undefined) throw new Error(`sellers.md has no ${name}`);
  const file = path.join(work, `${sellerPort}-${name}`);
  writeFileSync(
    file,
    edit(code)
      .replaceAll(FACILITATOR_URL, stack.serveUrl)
      .replaceAll(SELLER_PORT, String(sellerPort)),
  );
  return file;
}

async function startSeller(name: string, stack: Stack, edit?: Edit) {
  const port = await freePort();
  const child = spawn(process.execPath, [written(name, stack, port, edit)], {
    cwd: work,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  return new Promise<{ child: ChildProcess; port: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start: ${output}`)), 15_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(`seller on http://127.0.0.1:${port}/weather`)) {
        clearTimeout(timer);
        resolve({ child, port });
      }
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    child.once("exit", (code) => reject(new Error(`${name} exited ${code}: ${output}`)));
  });
}

function runBuyer(stack: Stack, port: number, edit?: Edit) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [written("buyer.mjs", stack, port, edit)],
      { cwd: work, timeout: 20_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

/** The buyer, run as written (or edited), pays the seller on `port`: 0.01 USDC lands with the payee. */
async function bought(stack: Stack, port: number, edit?: Edit) {
  const run = await runBuyer(stack, port, edit);
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  const [first, second] = run.stdout.trim().split("\n");
  expect(first).toBe("200 { city: 'Lisbon', forecast: 'sunny' }");
  const hash = /^paid in transaction (0x[0-9a-f]{64})$/.exec(second ?? "")?.[1] as Hex;
  expect(hash).toBeDefined();

  const receipt = await stack.chain.getTransactionReceipt({ hash });
  expect(receipt.status).toBe("success");
  const transfers = parseEventLogs({ abi: erc20Abi, logs: receipt.logs, eventName: "Transfer" });
  expect(transfers.map((t) => [t.address.toLowerCase(), t.args])).toEqual([
    [
      stack.info.token.address.toLowerCase(),
      { from: stack.info.payers[0], to: stack.info.payee, value: 10_000n },
    ],
  ]);
}

/** The section "On the plain devnet": its two lines, as code spans. */
function plainDevnetLines() {
  const section = PAGE.slice(PAGE.indexOf("## On the plain devnet"));
  const spans = [...section.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] as string);
  const parser = spans.find((span) => span.startsWith("new ExactEvmScheme().registerMoneyParser"));
  const controls = spans.find((span) => span.startsWith("spendControls: "));
  if (!parser || !controls) throw new Error("sellers.md's plain-devnet lines are missing");
  return { parser, controls };
}

const onPlainDevnet: Edit = (code) => code.replaceAll('"eip155:84532"', '"eip155:31337"');

describe("docs/sellers.md, run as written", () => {
  it("names a file for each code block and installs every package the code imports", () => {
    expect([...files.keys()]).toEqual(["seller.mjs", "seller-hono.mjs", "buyer.mjs"]);
    for (const [name, code] of files) {
      const imported = [...code.matchAll(/from "([^"]+)"/g)].map((m) => {
        const spec = m[1] as string;
        return spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0];
      });
      expect(installedFor(name), name).toEqual(expect.arrayContaining(imported));
    }
    for (const name of ["seller.mjs", "seller-hono.mjs"]) {
      expect(files.get(name)).toContain(`url: "${FACILITATOR_URL}"`);
      expect(files.get(name)).toContain('price: "$0.01"');
      expect(files.get(name)).toContain(`payTo: "${baseSepolia.info.payee}"`);
    }
    expect(files.get("buyer.mjs")).toContain(`http://127.0.0.1:${SELLER_PORT}/weather`);
    // The devnet is the network whose default asset the SDK prices "$0.01" in.
    expect(baseSepolia.info.network).toBe("eip155:84532");
  });

  it.each([
    ["seller.mjs", "@x402/express"],
    ["seller-hono.mjs", "@x402/hono"],
  ])(
    "the buyer pays %s's $0.01 (%s) and gets the weather; the payment lands on chain",
    async (name) => {
      const seller = await startSeller(name, baseSepolia);
      try {
        await bought(baseSepolia, seller.port);
      } finally {
        seller.child.kill("SIGTERM");
      }
    },
  );

  it("on the plain devnet, the page's two lines make the same code pay, and the buyer's is needed", async () => {
    const { parser, controls } = plainDevnetLines();
    expect(parser).toContain(plain.info.token.address);
    expect(controls).toContain(plain.info.token.address);
    const seller: Edit = (code) =>
      onPlainDevnet(code).replace("new ExactEvmScheme(),", `${parser},`);
    const buyer: Edit = (code) =>
      onPlainDevnet(code).replace("schemes: [", `${controls}, schemes: [`);
    const running = await startSeller("seller.mjs", plain, seller);
    try {
      await bought(plain, running.port, buyer);
      // Without the buyer's line, the official client refuses to pay, as the page says.
      const refused = await runBuyer(plain, running.port, onPlainDevnet);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain("All payment requirements were rejected by spendControls");
    } finally {
      running.child.kill("SIGTERM");
    }
  });
});
