/**
 * batch-settlement from the terminal (issue 28, item 8), typed into a shell with the devnet.env of
 * `facilitator devnet --svm` sourced: `pay --scheme batch-settlement` takes the EVM chain without
 * --network; a deposit, a voucher, a claim, a sweep and a refund are made with `pay` and settled
 * with `settle`, each checked on chain; batch-settlement.md's lines with the devnet's own files
 * run as written; while `serve` runs, `settle` is refused (`key_in_use`, naming its /settle) and
 * the page's requests to that /settle work; misuse exits 2 with a message.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { type Address, createPublicClient, erc20Abi, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import {
  type DevnetProcess,
  ROOT,
  shell,
  sourcedEnv,
  spawnCommand,
  spawnDevnet,
  stop,
  waitFor,
} from "./helpers/devnet-process.js";

let devnet: DevnetProcess;
let dir: string;
let envFile: string;
let info: { rpcUrl: string; token: { address: Address }; payee: Address; payers: Address[] };
let chain: ReturnType<typeof createPublicClient>;

beforeAll(async () => {
  devnet = spawnDevnet(["--svm", "--port", "0", "--svm-port", "0"]);
  const banner = await waitFor(devnet, "npx facilitator doctor", { ms: 60_000 });
  envFile = /source (\S+devnet\.env)/.exec(banner)?.[1] ?? "";
  dir = path.dirname(envFile);
  info = JSON.parse(await readFile(path.join(dir, "devnet.json"), "utf8"));
  chain = createPublicClient({ transport: http(info.rpcUrl) });
});

afterAll(() => stop(devnet));

/** One line typed with devnet.env sourced: its exit status and its JSON answer. */
async function typed(line: string) {
  const run = await shell([envFile], line);
  return { ...run, answer: run.stdout.trim() ? JSON.parse(run.stdout) : undefined };
}

const channel = async (id: Hex) => {
  const [balance, totalClaimed] = await chain.readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "channels",
    args: [id],
  });
  const refundNonce = await chain.readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "refundNonce",
    args: [id],
  });
  return { balance, totalClaimed, refundNonce };
};

const usdcOf = (owner: Address) =>
  chain.readContract({
    address: info.token.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [owner],
  });

const claimedFor = (receiver: Address) =>
  chain.readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "receivers",
    args: [receiver, info.token.address],
  });

describe("batch-settlement from the terminal, under devnet --svm", () => {
  it("a deposit, a voucher, a claim, a sweep and a refund, made with pay and settled with settle", async () => {
    const payer = info.payers[2] as Address;
    const voucher = path.join(dir, "payer3-voucher.json");

    // The scheme is EVM-only: with an EVM and a Solana RPC configured, pay takes the EVM chain.
    const deposit = await typed(
      "facilitator pay --scheme batch-settlement --payer 3 --x402 | facilitator settle -",
    );
    expect(deposit.code, deposit.stderr).toBe(0);
    expect(deposit.answer).toMatchObject({ success: true, network: "eip155:31337" });
    const id = deposit.answer.extra.channelState.channelId as Hex;
    expect(await channel(id)).toEqual({ balance: 50_000n, totalClaimed: 0n, refundNonce: 0n });

    const verified = await typed(
      `facilitator pay --scheme batch-settlement --payer 3 --x402 --cumulative 0.02 > ${voucher} && facilitator verify ${voucher}`,
    );
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.answer).toMatchObject({ isValid: true, extra: { channelId: id } });

    const claimed = await typed(`facilitator pay --claim ${voucher} | facilitator settle -`);
    expect(claimed.code, claimed.stderr).toBe(0);
    expect(claimed.answer).toMatchObject({ success: true });
    expect(await channel(id)).toMatchObject({ balance: 50_000n, totalClaimed: 20_000n });

    const payeeBefore = await usdcOf(info.payee);
    const swept = await typed("facilitator pay --sweep | facilitator settle -");
    expect(swept.code, swept.stderr).toBe(0);
    expect(swept.answer).toMatchObject({ success: true, amount: "20000" });
    expect((await usdcOf(info.payee)) - payeeBefore).toBe(20_000n);
    expect(await claimedFor(info.payee)).toEqual([20_000n, 20_000n]);

    const payerBefore = await usdcOf(payer);
    const refunded = await typed(`facilitator pay --refund ${voucher} | facilitator settle -`);
    expect(refunded.code, refunded.stderr).toBe(0);
    expect(refunded.answer).toMatchObject({ success: true, amount: "30000" });
    expect((await usdcOf(payer)) - payerBefore).toBe(30_000n);
    expect(await channel(id)).toEqual({
      balance: 20_000n,
      totalClaimed: 20_000n,
      refundNonce: 1n,
    });

    // Nothing is left: pay says so instead of printing a refund of nothing.
    const again = await typed(`facilitator pay --refund ${voucher}`);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`nothing is left to refund in channel ${id}`);
  });

  it("batch-settlement.md's lines with the devnet's own files run as the page says", async () => {
    const page = await readFile(path.join(ROOT, "docs", "batch-settlement.md"), "utf8");
    const section = page.slice(page.indexOf("## Try it on the devnet"));
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
    const lines = block
      .split("\n")
      .filter((line) => line.startsWith("npx facilitator"))
      .map((line) => line.replace(/\s+#.*$/, "").replaceAll("$D", dir));
    expect(lines).toHaveLength(6);
    const payer = info.payers[1] as Address;
    const payerBefore = await usdcOf(payer);
    const payeeBefore = await usdcOf(info.payee);
    const answers = [];
    for (const line of lines) answers.push(await typed(line));
    expect(answers.map((a) => a.code)).toEqual([1, 0, 0, 0, 0, 0]);
    expect(answers[0]?.answer).toMatchObject({ invalidReason: expect.stringMatching(/channel/) });
    expect(answers[2]?.answer).toMatchObject({ isValid: true });
    const id = answers[1]?.answer.extra.channelState.channelId as Hex;
    expect(await channel(id)).toEqual({
      balance: 20_000n,
      totalClaimed: 20_000n,
      refundNonce: 1n,
    });
    expect((await usdcOf(payer)) - payerBefore).toBe(-20_000n);
    expect((await usdcOf(info.payee)) - payeeBefore).toBe(20_000n);
  });

  it("while serve runs, settle is refused (key_in_use, naming its /settle); that /settle settles", async () => {
    const serve = spawnCommand(["serve", "--port", "0"], await sourcedEnv(envFile));
    try {
      const listening = await waitFor(serve, '"event":"listening"', { stream: "stderr" });
      const url = JSON.parse(listening.split("\n")[0] ?? "").url as string;
      const depositFile = path.join(dir, "payer4-deposit.json");
      const voucherFile = path.join(dir, "payer4-voucher.json");
      // pay only reads the chain: it works while serve holds the key.
      const refused = await typed(
        `facilitator pay --scheme batch-settlement --payer 4 --x402 > ${depositFile} && facilitator settle ${depositFile}`,
      );
      expect(refused.code).toBe(2);
      expect(refused.answer).toMatchObject({ success: false, error: "key_in_use" });
      expect(refused.answer.message).toContain(`send this payment to POST ${url}/settle instead`);

      const post = async (body: string, headers: Record<string, string> = {}) => {
        const response = await fetch(`${url}/settle`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body,
        });
        return { status: response.status, answer: await response.json() };
      };
      expect(await post(await readFile(depositFile, "utf8"))).toMatchObject({
        status: 200,
        answer: { success: true },
      });
      const claim = await typed(
        `facilitator pay --scheme batch-settlement --payer 4 --x402 --cumulative 0.02 > ${voucherFile} && facilitator pay --claim ${voucherFile}`,
      );
      expect(claim.code, claim.stderr).toBe(0);
      expect(await post(claim.stdout)).toMatchObject({ status: 200, answer: { success: true } });

      // serve signs a refund only for the channel's seller: the devnet's api-keys.json has its key.
      const refund = await typed(`facilitator pay --refund ${voucherFile}`);
      expect(refund.code, refund.stderr).toBe(0);
      expect(await post(refund.stdout)).toMatchObject({
        status: 403,
        answer: { error: "refund_not_authorized" },
      });
      const keys = JSON.parse(await readFile(path.join(dir, "api-keys.json"), "utf8"));
      const seller = { authorization: `Bearer ${keys.keys[0].key}` };
      expect(await post(refund.stdout, seller)).toMatchObject({
        status: 200,
        answer: { success: true, amount: "30000" },
      });
    } finally {
      await stop(serve);
    }
  });

  it("--claim given again claims each channel once, with its highest voucher, in one claim", async () => {
    const [three, four, higher] = ["payer3-voucher", "payer4-voucher", "payer3-higher"].map(
      (name) => path.join(dir, `${name}.json`),
    );
    const run = await typed(
      `facilitator pay --scheme batch-settlement --payer 3 --cumulative 0.025 > ${higher} && facilitator pay --claim ${three} --claim ${higher} --claim ${four}`,
    );
    expect(run.code, run.stderr).toBe(0);
    const claims = run.answer.payload.payload.claims as { totalClaimed: string }[];
    expect(claims.map((row) => row.totalClaimed)).toEqual(["25000", "20000"]);
  });

  it("misuse exits 2 with a message", async () => {
    const voucher = path.join(dir, "payer3-voucher.json");
    const runs = await Promise.all([
      typed(`facilitator pay --claim ${path.join(dir, "request.json")}`),
      typed(`facilitator pay --claim ${voucher} --sweep`),
      typed(`facilitator pay --refund ${voucher} --amount 1`),
      typed("facilitator pay --scheme batch-settlement --network solana-devnet"),
    ]);
    for (const run of runs) expect(run.code, run.stdout).toBe(2);
    expect(runs[0]?.stderr).toContain("holds no batch-settlement voucher");
    expect(runs[1]?.stderr).toContain("--claim and --sweep: pick one");
    expect(runs[2]?.stderr).toContain("--amount: not with --refund");
    expect(runs[3]?.stderr).toContain("batch-settlement is served on EVM chains only");
  });
});
