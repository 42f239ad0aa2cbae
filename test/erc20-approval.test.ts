/**
 * The erc20ApprovalGasSponsoring extension on Permit2 payments: a payer with tokens and no gas
 * sends its signed approve(Permit2); we fund its gas, broadcast it, then settle. Verdicts are
 * compared with the reference facilitator (the extension registered on it); settlement runs on
 * the devnet's EIP-2612 token, Permit2 and exact proxy.
 */
import { type Address, encodeFunctionData, erc20Abi, type Hex, maxUint256, parseAbi } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import type { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { payerHolding } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { clientsOf, officialPermit2Payload, permit2Requirements } from "./helpers/permit2.js";
import { referenceFacilitator, verifyApprovalsOn } from "./helpers/x402.js";

let devnet: Devnet;
let ours: Facilitator;
let reference: ReturnType<typeof referenceFacilitator>;

beforeAll(async () => {
  devnet = await startDevnet();
  ours = facilitatorOn(devnet);
  reference = referenceFacilitator(devnet, devnet.payee);
  verifyApprovalsOn(reference, devnet, devnet.payee);
});
afterAll(async () => {
  await devnet?.stop();
});

/** A payment signed by the official client, which signs the approval itself. */
async function officialPayment(payer: DevAccount) {
  const requirements = permit2Requirements(devnet, devnet.permitToken);
  const payload = await officialPermit2Payload(devnet, payer, requirements, {
    erc20ApprovalGasSponsoring: true,
  });
  return { payload: payload as unknown as Record<string, unknown>, requirements };
}

type Pair = Awaited<ReturnType<typeof officialPayment>>;
const infoOf = (pair: Pair) =>
  (pair.payload.extensions as Record<string, { info: Record<string, string> }>)
    .erc20ApprovalGasSponsoring?.info as Record<string, string>;

/** The same payment with its approval replaced by one we sign, with some terms changed. */
async function withApproval(
  pair: Pair,
  signer: DevAccount,
  change: { to?: Address; spender?: Address; nonceOffset?: number } = {},
): Promise<Pair> {
  const account = privateKeyToAccount(signer.privateKey);
  const { publicClient } = clientsOf(devnet);
  const nonce = await publicClient.getTransactionCount({ address: account.address });
  const signed = await account.signTransaction({
    chainId: devnet.chainId,
    to: change.to ?? devnet.permitToken.address,
    data: encodeFunctionData({
      abi: parseAbi(["function approve(address,uint256)"]),
      args: [change.spender ?? devnet.permit2, maxUint256],
    }),
    nonce: nonce + (change.nonceOffset ?? 0),
    gas: 70_000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 100_000_000n,
  });
  const copy = JSON.parse(JSON.stringify(pair)) as Pair;
  infoOf(copy).signedTransaction = signed;
  return copy;
}

const tokenBalance = (who: Address) =>
  clientsOf(devnet).publicClient.readContract({
    address: devnet.permitToken.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });

describe("verify", () => {
  test("a payer without gas or approval, with its signed approval: valid for both", async () => {
    const payer = await payerHolding(devnet, 1_000_000n, devnet.permitToken.address);
    const pair = await officialPayment(payer);
    expect(infoOf(pair).signedTransaction).toMatch(/^0x02/);
    expect(await reference.verify(pair.payload as never, pair.requirements as never)).toMatchObject(
      {
        isValid: true,
      },
    );
    expect((await handleVerify(ours, pair)).body).toMatchObject({
      success: true,
      payer: payer.address,
    });
  });

  test.each([
    ["approving another spender", "erc20_approval_tx_wrong_spender"],
    ["calling another contract", "erc20_approval_tx_wrong_target"],
    ["signed by someone else", "erc20_approval_tx_signer_mismatch"],
  ] as const)("an approval %s: %s, for both", async (name, reason) => {
    const payer = await payerHolding(devnet, 1_000_000n, devnet.permitToken.address);
    const base = await officialPayment(payer);
    const other = { address: privateKeyToAccount(generatePrivateKey()).address };
    const pair = name.startsWith("approving")
      ? await withApproval(base, payer, { spender: other.address })
      : name.startsWith("calling")
        ? await withApproval(base, payer, { to: devnet.plainToken.address })
        : await withApproval(base, devnet.payers[4] as DevAccount);
    expect(await reference.verify(pair.payload as never, pair.requirements as never)).toMatchObject(
      {
        isValid: false,
        invalidReason: reason,
      },
    );
    const x402 = await handleVerify(ours, {
      x402Version: 2,
      paymentPayload: pair.payload,
      paymentRequirements: pair.requirements,
    });
    expect(x402.body).toMatchObject({ isValid: false, invalidReason: reason });
    expect((await handleVerify(ours, pair)).body).toMatchObject({ error: "invalid_extension" });
  });

  test("stricter than the reference where our gas is at stake: a nonce the payer is not at", async () => {
    const payer = await payerHolding(devnet, 1_000_000n, devnet.permitToken.address);
    const pair = await withApproval(await officialPayment(payer), payer, { nonceOffset: 1 });
    const reply = await handleVerify(ours, pair);
    expect(reply.body).toMatchObject({ success: false, error: "invalid_extension" });
    expect(String(reply.body.message)).toMatch(/nonce 1, the payer's next is 0/);
  });
});

describe("settle", () => {
  test("gas funded, approval broadcast, payment settled: three transactions, paid once", async () => {
    const payer = await payerHolding(devnet, 1_000_000n, devnet.permitToken.address);
    const pair = await officialPayment(payer);
    const { publicClient } = clientsOf(devnet);
    const us = devnet.facilitator.address;
    const sentBefore = await publicClient.getTransactionCount({ address: us });
    const payeeBefore = await tokenBalance(devnet.payee.address);
    expect(await publicClient.getBalance({ address: payer.address })).toBe(0n);

    const replies = await Promise.all([1, 2, 3].map(() => handleSettle(ours, pair)));
    const wins = replies.filter((r) => r.body.success);
    expect(wins).toHaveLength(1);
    expect(await tokenBalance(devnet.payee.address)).toBe(payeeBefore + 10_000n);
    // Ours: the gas for the payer, then the settlement. The payer's: its approval.
    expect(await publicClient.getTransactionCount({ address: us })).toBe(sentBefore + 2);
    expect(await publicClient.getTransactionCount({ address: payer.address })).toBe(1);
    const allowance = await publicClient.readContract({
      address: devnet.permitToken.address,
      abi: erc20Abi,
      functionName: "allowance",
      args: [payer.address, devnet.permit2],
    });
    expect(allowance).toBe(maxUint256);
    const receipt = await publicClient.getTransactionReceipt({
      hash: wins[0]?.body.transactionHash as Hex,
    });
    expect(receipt.to?.toLowerCase()).toBe(devnet.exactPermit2Proxy.toLowerCase());
    expect((await handleSettle(ours, pair)).body).toMatchObject({ error: "nonce_already_used" });
  });
});

describe("a crash in the middle", () => {
  let stalled: Devnet;
  beforeAll(async () => {
    stalled = await startDevnet({ mining: "manual" });
  });
  afterAll(async () => {
    await stalled?.stop();
  });

  test("kill -9 after the payer's gas was sent: the retry follows it, then approval and payment, once", async () => {
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const os = await import("node:os");
    const path = await import("node:path");
    const { createTestClient, http } = await import("viem");
    const { send, startServe } = await import("./helpers/serve.js");
    const previous = devnet;
    devnet = stalled;
    try {
      const anvil = createTestClient({ mode: "anvil", transport: http(stalled.rpcUrl) });
      // Funding the payer needs blocks: mine as the set-up goes, then stop.
      await anvil.setAutomine(true);
      const payer = await payerHolding(stalled, 1_000_000n, stalled.permitToken.address);
      const pair = await officialPayment(payer);
      await anvil.setAutomine(false);
      const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-approval-crash-"));
      const key = path.join(dir, "facilitator.key");
      writeFileSync(key, stalled.facilitator.privateKey, { mode: 0o600 });
      const args = [
        "--rpc-url",
        stalled.rpcUrl,
        "--private-key-file",
        key,
        "--journal",
        path.join(dir, "journal.jsonl"),
      ];
      const body = JSON.stringify(pair);
      const headers = { "content-type": "application/json" };
      const { publicClient } = clientsOf(stalled);
      const us = stalled.facilitator.address;
      const sent = () => publicClient.getTransactionCount({ address: us, blockTag: "pending" });
      const sentBefore = await sent();
      const payeeBefore = await tokenBalance(stalled.payee.address);

      const first = await startServe(args);
      const settling = send(first.url, { path: "/settle", body, headers });
      for (let i = 0; i < 200 && (await sent()) === sentBefore; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      // The payer's gas is in the pool, unmined: the process dies here.
      expect(await sent()).toBe(sentBefore + 1);
      first.child.kill("SIGKILL");
      await first.exited;
      await settling;

      const second = await startServe(args);
      let mining = true;
      const miner = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 500));
        while (mining) {
          await anvil.mine({ blocks: 1 });
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      })();
      try {
        const retry = await send(second.url, { path: "/settle", body, headers });
        expect(retry.status, retry.body).toBe(200);
        expect(await tokenBalance(stalled.payee.address)).toBe(payeeBefore + 10_000n);
        // The gas once, the settlement once; the payer's approval once.
        expect(await sent()).toBe(sentBefore + 2);
        expect(await publicClient.getTransactionCount({ address: payer.address })).toBe(1);
      } finally {
        mining = false;
        await miner;
        second.child.kill("SIGKILL");
      }
    } finally {
      devnet = previous;
    }
  }, 60_000);
});
