/**
 * Channel transactions keep the money rules of payments. A channel's payer becomes a contract
 * wallet whose signature check passes in every simulation (gas price 0) and burns gas in a mined
 * transaction (TestGasBurnerWallet, placed with `anvil_setCode` after the channel was opened), so
 * each claim of its vouchers passes our checks and runs out of gas on chain. On a real anvil
 * devnet with the project's batch-settlement contract, the channel opened by the official client.
 *
 * Before: 60 such claims and settles sent 60 reverted transactions of ours (3.12M gas), the
 * identical claim was sent again every time, and `facilitator_wasted_gas` stayed 0. Now: each
 * revert is charged (to the payer, its asset and the wasted-gas budget, counted by the metric);
 * the same claim is not sent again once it reverted; after three the payer waits.
 */
import { x402Client } from "@x402/core/client";
import {
  BatchSettlementEvmScheme as BatchClient,
  computeChannelId,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import {
  createTestClient,
  createWalletClient,
  type Hex,
  http,
  type TransactionReceipt,
  zeroAddress,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import {
  testGasBurnerWalletAbi,
  testGasBurnerWalletRuntimeBytecode,
} from "../src/evm/devnet/artifacts.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import type { Facilitator } from "../src/facilitator.js";
import { createMetrics, type Metrics } from "../src/http/metrics.js";
import { handleSettle } from "../src/protocol/respond.js";
import {
  batchRequirements,
  managerRequirements,
  officialSigner,
  x402Request,
} from "./helpers/batch.js";
import { chainOf } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";

const PRICE = 1_000n;
const AUTHORIZER = devAccounts[7] as DevAccount;

let devnet: Devnet;
let facilitator: Facilitator;
let metrics: Metrics;

beforeAll(async () => {
  devnet = await startDevnet();
  facilitator = facilitatorOn(devnet, {
    receiverAuthorizer: privateKeyToAccount(AUTHORIZER.privateKey),
    claimBatch: { maxRows: 100, maxWaitMs: 0 },
  });
  metrics = await createMetrics();
  metrics.attach(facilitator);
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
});

const ourNonce = () =>
  chainOf(devnet).getTransactionCount({ address: devnet.facilitator.address, blockTag: "pending" });

async function wastedGas(): Promise<bigint> {
  const text = (await metrics.render()).text;
  return BigInt(/^facilitator_wasted_gas\{chain_id="31337"\} (\d+)$/m.exec(text)?.[1] ?? "0");
}

/** Turns `address` into a wallet that accepts any signature and burns 1,000,000 gas when mined. */
async function becomeGasBurner(address: Hex) {
  const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
  await anvil.setCode({ address, bytecode: testGasBurnerWalletRuntimeBytecode });
  const wallet = createWalletClient({
    account: privateKeyToAccount(devnet.payers[0]?.privateKey as Hex),
    transport: http(devnet.rpcUrl),
  });
  const hash = await wallet.writeContract({
    address,
    abi: testGasBurnerWalletAbi,
    functionName: "configure",
    args: [1_000_000n],
    chain: null,
  });
  await chainOf(devnet).waitForTransactionReceipt({ hash, pollingInterval: 50 });
}

test("claims that revert only when mined: charged, counted, not sent again unchanged, and the payer waits", async () => {
  const payer = devnet.payers[3] as DevAccount;
  const offer = batchRequirements(devnet, {
    payTo: privateKeyToAccount(generatePrivateKey()).address,
    receiverAuthorizer: AUTHORIZER.address,
    price: PRICE,
  });
  // No payer authorizer: the contract checks vouchers with the payer itself (EIP-1271 once it has code).
  const client = new BatchClient(officialSigner(devnet, payer), {
    payerAuthorizer: zeroAddress,
    depositPolicy: { depositMultiplier: 10 },
  });
  const config = client.buildChannelConfig(offer as never);
  const id = computeChannelId(config, devnet.network) as Hex;
  const claimRow = async (total: bigint) => ({
    voucher: { channel: config, maxClaimableAmount: total.toString() },
    signature: (
      await signVoucher(officialSigner(devnet, payer), id, total.toString(), devnet.network)
    ).signature,
    totalClaimed: total.toString(),
  });
  const payments = x402Client.fromConfig({ schemes: [], spendControls: false });
  payments.register(devnet.network, client);
  const { payload: deposit } = (await payments.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [offer],
  } as never)) as unknown as { payload: Record<string, unknown> };
  const opened = await handleSettle(facilitator, x402Request(offer, deposit));
  expect(opened.body, JSON.stringify(opened.body)).toMatchObject({ success: true });
  await becomeGasBurner(payer.address);
  const claim = async (total: bigint) =>
    handleSettle(
      facilitator,
      x402Request(managerRequirements(offer), {
        type: "claim",
        claims: [await claimRow(total * PRICE)],
      }),
    );

  const wastedBefore = await wastedGas();
  const receipts: TransactionReceipt[] = [];
  const sentBefore = await ourNonce();
  for (const total of [1n, 2n, 3n]) {
    const reply = await claim(total);
    expect(reply.body, JSON.stringify(reply.body)).toMatchObject({ success: false });
    const hash = reply.body.transaction as Hex;
    const receipt = await chainOf(devnet).getTransactionReceipt({ hash });
    expect(receipt.status).toBe("reverted");
    receipts.push(receipt);
    if (total === 1n) {
      // The same claim again passes every simulation, and is not sent again.
      const again = await claim(1n);
      expect(again.body, JSON.stringify(again.body)).toMatchObject({ success: false });
      expect(String(again.body.errorMessage)).toMatch(/not sent again/);
      expect(await ourNonce()).toBe(sentBefore + 1);
    }
  }
  expect(await ourNonce()).toBe(sentBefore + 3);
  const burned = receipts.reduce((sum, r) => sum + r.gasUsed, 0n);
  expect(await wastedGas()).toBe(wastedBefore + burned);

  // Three reverts charged: the payer's next claim waits, and nothing is sent.
  const throttled = await claim(4n);
  expect(throttled.body, JSON.stringify(throttled.body)).toMatchObject({
    success: false,
    errorReason: "payer_throttled",
  });
  expect(await ourNonce()).toBe(sentBefore + 3);
}, 120_000);
