/**
 * `facilitator pay --scheme batch-settlement` on the devnet: an empty channel gets a deposit with
 * its first voucher (settled by our `settle`), a funded one a voucher alone; both are accepted by
 * our verify and by the official batch-settlement facilitator (x402 2.27); a Permit2 deposit too;
 * misuse exits 2. The built CLI as a subprocess.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { x402Facilitator } from "@x402/core/facilitator";
import { BatchSettlementEvmScheme as BatchFacilitator } from "@x402/evm/batch-settlement/facilitator";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  devAccounts,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { chainOf } from "./helpers/chain.js";
import { removeCliJournals, runCli } from "./helpers/run-cli.js";
import { referenceSigner } from "./helpers/x402.js";

let devnet: Devnet;
let official: x402Facilitator;
let dir: string;

beforeAll(async () => {
  devnet = await startDevnet();
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-pay-batch-"));
  official = new x402Facilitator();
  official.register(
    devnet.network,
    new BatchFacilitator(
      referenceSigner(devnet, devAccounts[6] as DevAccount),
      privateKeyToAccount((devAccounts[7] as DevAccount).privateKey),
    ),
  );
}, 60_000);

afterAll(async () => {
  removeCliJournals();
  rmSync(dir, { recursive: true, force: true });
  await devnet?.stop();
});

const env = () => ({ FACILITATOR_RPC_URL: devnet.rpcUrl, XDG_STATE_HOME: dir });

async function pay(...args: string[]) {
  const run = await runCli(["pay", "--scheme", "batch-settlement", "--x402", ...args], env());
  expect(run.code, run.stderr).toBe(0);
  return JSON.parse(run.stdout);
}

async function cli(command: "verify" | "settle", body: unknown) {
  const file = path.join(dir, `${command}-${Date.now()}-${Math.random()}.json`);
  writeFileSync(file, JSON.stringify(body));
  const run = await runCli([command, file], {
    ...env(),
    FACILITATOR_PRIVATE_KEY: devnet.facilitator.privateKey,
  });
  return { code: run.code, answer: JSON.parse(run.stdout), stderr: run.stderr };
}

const channels = (id: `0x${string}`) =>
  chainOf(devnet).readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "channels",
    args: [id],
  });

describe("facilitator pay --scheme batch-settlement", () => {
  test("an empty channel: a deposit of 5 payments' worth, settled once; then vouchers, accepted by both facilitators", async () => {
    const deposit = await pay("--payer", "3");
    expect(deposit.paymentPayload.payload.type).toBe("deposit");
    expect(deposit.paymentPayload.payload.deposit.amount).toBe("50000");
    expect(deposit.paymentRequirements).toMatchObject({
      scheme: "batch-settlement",
      amount: "10000",
      extra: { receiverAuthorizer: (devAccounts[7] as DevAccount).address, withdrawDelay: 900 },
    });
    const theirs = await official.verify(deposit.paymentPayload, deposit.paymentRequirements);
    expect(theirs).toMatchObject({ isValid: true });
    const settled = await cli("settle", deposit);
    expect(settled.answer, settled.stderr).toMatchObject({ success: true });
    const id = deposit.paymentPayload.payload.voucher.channelId;
    expect(await channels(id)).toEqual([50_000n, 0n]);

    // Funded now: a voucher alone, for what the buyer owes in all.
    const voucher = await pay("--payer", "3", "--cumulative", "0.02");
    expect(voucher.paymentPayload.payload).toMatchObject({
      type: "voucher",
      voucher: { channelId: id, maxClaimableAmount: "20000" },
    });
    expect(
      await official.verify(voucher.paymentPayload, voucher.paymentRequirements),
    ).toMatchObject({ isValid: true });
    const verified = await cli("verify", voucher);
    expect(verified.answer).toMatchObject({ isValid: true, extra: { balance: "50000" } });

    // More than the channel holds: pay tops it up with a deposit.
    const topUp = await pay("--payer", "3", "--cumulative", "0.07");
    expect(topUp.paymentPayload.payload.type).toBe("deposit");
    expect(BigInt(topUp.paymentPayload.payload.deposit.amount)).toBe(50_000n);
  });

  test("a Permit2 deposit for a payer that approved Permit2", async () => {
    const payer = devnet.payers[3] as DevAccount;
    await approvePermit2(devnet, payer, devnet.token.address);
    const deposit = await pay("--payer", "4", "--method", "permit2", "--deposit", "0.1");
    expect(deposit.paymentPayload.payload.deposit.authorization.permit2Authorization).toBeDefined();
    expect(deposit.paymentRequirements.extra.assetTransferMethod).toBe("permit2");
    expect(
      await official.verify(deposit.paymentPayload, deposit.paymentRequirements),
    ).toMatchObject({ isValid: true });
    const settled = await cli("settle", deposit);
    expect(settled.answer, settled.stderr).toMatchObject({ success: true });
    const id = deposit.paymentPayload.payload.voucher.channelId;
    expect(await channels(id)).toEqual([100_000n, 0n]);
  });

  test("misuse exits 2 with a message", async () => {
    const runs = await Promise.all([
      runCli(["pay", "--deposit", "1"], env()),
      runCli(["pay", "--scheme", "batch-settlement", "--v1"], env()),
      runCli(["pay", "--scheme", "batch-settlement", "--cumulative", "0"], env()),
      runCli(["pay", "--scheme", "batch-settlement", "--receiver-authorizer", "nope"], env()),
    ]);
    for (const run of runs) expect(run.code, run.stdout).toBe(2);
    expect(runs[0]?.stderr).toMatch(/go with --scheme batch-settlement/);
    expect(runs[1]?.stderr).toMatch(/x402 v2 only/);
    expect(runs[2]?.stderr).toMatch(/--cumulative must be more than 0/);
    expect(runs[3]?.stderr).toMatch(/not an address/);
  });
});
