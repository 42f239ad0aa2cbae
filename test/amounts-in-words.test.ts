/**
 * Amounts as people read them, from the built CLI against a devnet: `pay` says the token amount it
 * signed with its symbol (the units beside it), an `insufficient_funds` refusal says what the payer
 * holds and the payment needs the same way, and `doctor` says a gas balance to 4 decimals with its
 * symbol. Also the formatting itself, on edge values.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Devnet, PLAIN_TOKEN_ADDRESS, startDevnet } from "../src/evm/devnet/index.js";
import { decimalAmount, gasAmount, plainSymbol, tokenAmount } from "../src/protocol/amounts.js";
import { DEVNET_USDC_MINT, type SvmDevnet, startSvmDevnet } from "../src/svm/devnet/index.js";
import { runCli } from "./helpers/run-cli.js";

let devnet: Devnet;
let svm: SvmDevnet;
let dir: string;

beforeAll(async () => {
  [devnet, svm] = await Promise.all([startDevnet(), startSvmDevnet({ slotMs: 100 })]);
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-amounts-"));
}, 60_000);

afterAll(async () => {
  await Promise.all([devnet?.stop(), svm?.stop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs the CLI with stderr on a pseudo-terminal (script(1)), as a person sees it, stdout into a
 * file; resolves with what the terminal showed and what stdout held.
 */
function inTerminal(args: string[], env: Record<string, string>) {
  const out = path.join(dir, `out-${Math.random().toString(36).slice(2)}.json`);
  const quoted = args.map((a) => `'${a}'`).join(" ");
  const line = `stty cols 200 rows 24; "${process.execPath}" bin/facilitator.js ${quoted} > "${out}"; echo "EXIT=$?"`;
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("FACILITATOR_")),
  );
  const child = spawn("script", ["-qec", line, "/dev/null"], {
    env: { ...clean, FORCE_COLOR: "0", SHELL: "/bin/bash", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let screen = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => {
    screen += s;
  });
  return new Promise<{ screen: string; stdout: string }>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no exit in 25 s: ${screen}`));
    }, 25_000);
    child.on("close", () => {
      clearTimeout(timer);
      resolve({ screen: screen.replace(/\r/g, ""), stdout: readFileSync(out, "utf8") });
    });
  });
}

const onDevnet = () => ({ FACILITATOR_RPC_URL: devnet.rpcUrl });

describe("pay says what it signed in the token's own units", () => {
  test("--amount 0.01 of the devnet's USDC: 0.01 USDC, the 10000 units beside it", async () => {
    const { screen, stdout } = await inTerminal(["pay", "--amount", "0.01"], onDevnet());
    expect(screen).toContain("EXIT=0");
    expect(screen).toContain(
      `signed 0.01 USDC (10000 units of ${devnet.token.address}) from ${devnet.payers[0]?.address}`,
    );
    expect(JSON.parse(stdout)).toHaveProperty("payload");
  });

  test("a token the tables do not know: its symbol and decimals read from it (PLAIN)", async () => {
    const { screen } = await inTerminal(
      ["pay", "--amount", "1.5", "--method", "permit2", "--asset", PLAIN_TOKEN_ADDRESS],
      onDevnet(),
    );
    expect(screen).toContain("EXIT=0");
    expect(screen).toContain(`signed 1.5 PLAIN (1500000 units of ${PLAIN_TOKEN_ADDRESS}) from`);
  });

  test("Solana: the devnet's USDC mint, its decimals from the mint", async () => {
    const { screen } = await inTerminal(["pay", "--amount", "0.25"], {
      FACILITATOR_RPC_URL: svm.rpcUrl,
    });
    expect(screen).toContain("EXIT=0");
    expect(screen).toContain(`signed 0.25 USDC (250000 units of ${DEVNET_USDC_MINT}) from`);
  });
});

describe("insufficient_funds says the amounts with the token's symbol", () => {
  async function verifyPaying(args: string[]): Promise<Record<string, unknown>> {
    const pay = await runCli(["pay", ...args], onDevnet());
    expect(pay.code, pay.stderr).toBe(0);
    const request = path.join(dir, `request-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(request, pay.stdout);
    const verify = await runCli(["verify", request], onDevnet());
    expect(verify.code, verify.stderr).toBe(1);
    return JSON.parse(verify.stdout) as Record<string, unknown>;
  }

  test("EIP-3009: 2,000,000 USDC from a payer holding 1,000,000", async () => {
    const answer = await verifyPaying(["--amount", "2000000"]);
    expect(answer).toMatchObject({
      error: "insufficient_funds",
      message:
        "the payer holds 1000000 USDC (1000000000000 units), the payment needs 2000000 USDC (2000000000000 units)",
    });
  });

  test("Permit2 with a token the tables do not know: its symbol, read once", async () => {
    const answer = await verifyPaying([
      "--amount",
      "2000000.25",
      "--method",
      "permit2",
      "--asset",
      PLAIN_TOKEN_ADDRESS,
    ]);
    expect(answer).toMatchObject({
      error: "insufficient_funds",
      message:
        "the payer holds 1000000 PLAIN (1000000000000 units), the payment needs 2000000.25 PLAIN (2000000250000 units)",
    });
  });
});

describe("doctor says a gas balance to 4 decimals, with its symbol", () => {
  test("after a settlement has spent some gas: ETH, no 18-digit fraction", async () => {
    const env = { ...onDevnet(), FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey };
    const pay = await runCli(["pay", "--amount", "0.01"], env);
    const request = path.join(dir, "spend-gas.json");
    writeFileSync(request, pay.stdout);
    expect((await runCli(["settle", request], env)).code).toBe(0);

    const doctor = await runCli(["doctor", "--json"], env);
    const report = JSON.parse(doctor.stdout) as { findings: { area: string; message: string }[] };
    const gas = report.findings.find((f) => f.area === "key" && f.message.includes("for gas"));
    expect(gas?.message).toMatch(
      new RegExp(
        `^${devnet.facilitator.address} holds 9999\\.\\d{1,4} ETH on eip155:${devnet.chainId} for gas$`,
      ),
    );
  });
});

describe("the words themselves", () => {
  test("token amounts: exact, symbol where known, units beside; unknown decimals: bare units", () => {
    expect(tokenAmount(10_000n, { decimals: 6, symbol: "USDC" })).toBe("0.01 USDC (10000 units)");
    expect(tokenAmount(1n, { decimals: 6 })).toBe("0.000001 (1 units)");
    expect(tokenAmount(5_000_000n, { decimals: 6, symbol: "USDC" })).toBe("5 USDC (5000000 units)");
    expect(tokenAmount(42n, undefined)).toBe("42");
    expect(decimalAmount(0n, 6)).toBe("0");
    expect(decimalAmount(123n, 0)).toBe("123");
  });

  test("gas balances: 4 decimals, or 4 significant digits below 1, rounded down", () => {
    expect(gasAmount(9_999_999_428_730_667_467_050n, 18)).toBe("9999.9994");
    expect(gasAmount(100_000_000_000n, 9)).toBe("100");
    expect(gasAmount(123_456_789_000_000n, 18)).toBe("0.0001234");
    expect(gasAmount(1n, 18)).toBe("0.000000000000000001");
    expect(gasAmount(0n, 18)).toBe("0");
  });

  test("a token's own symbol is kept only when it looks like a ticker", () => {
    expect(plainSymbol("USDC.e")).toBe("USDC.e");
    expect(plainSymbol("USDC\nthe payment is fine")).toBeUndefined();
    expect(plainSymbol("A".repeat(13))).toBeUndefined();
    expect(plainSymbol(7)).toBeUndefined();
  });
});
