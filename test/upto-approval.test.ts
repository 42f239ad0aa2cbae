/**
 * `upto` with the erc20ApprovalGasSponsoring extension (issue 26, item 3): a payer holding tokens
 * but no gas and no Permit2 approval pays with the official upto client, which signs its
 * approve(Permit2) when the seller declares the extension. The reference facilitator (2.27, the
 * extension registered) takes it; before, we refused it for the missing allowance. Now we fund
 * the payer's gas, broadcast its approval, then settle what was used through the upto proxy. On a
 * real anvil devnet with the devnet's Permit2, upto proxy and EIP-2612 token.
 */
import { x402Client } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import { UptoEvmScheme as UptoEvmClient } from "@x402/evm/upto/client";
import { UptoEvmScheme as UptoEvmFacilitator } from "@x402/evm/upto/facilitator";
import { erc20Abi, type Hex, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { DevAccount, Devnet } from "../src/evm/devnet/index.js";
import { startDevnet } from "../src/evm/devnet/index.js";
import type { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { payerHolding } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { clientsOf } from "./helpers/permit2.js";
import { referenceSigner, verifyApprovalsOn } from "./helpers/x402.js";

let devnet: Devnet;
let ours: Facilitator;
let reference: x402Facilitator;

const DECLARATION = {
  erc20ApprovalGasSponsoring: { info: { description: "gasless approval", version: "1" } },
};

beforeAll(async () => {
  devnet = await startDevnet();
  ours = facilitatorOn(devnet);
  reference = new x402Facilitator();
  reference.register(
    devnet.network,
    new UptoEvmFacilitator(referenceSigner(devnet, devnet.facilitator)),
  );
  verifyApprovalsOn(reference, devnet, devnet.facilitator);
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
});

const balanceOf = (who: `0x${string}`) =>
  clientsOf(devnet).publicClient.readContract({
    address: devnet.permitToken.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });

async function uptoPayment(payer: DevAccount) {
  const requirements = {
    scheme: "upto",
    network: devnet.network,
    amount: "50000",
    asset: devnet.permitToken.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: {
      name: devnet.permitToken.name,
      version: devnet.permitToken.version,
      facilitatorAddress: devnet.facilitator.address,
    },
  };
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(
    devnet.network,
    new UptoEvmClient(privateKeyToAccount(payer.privateKey), { rpcUrl: devnet.rpcUrl }),
  );
  const payload = (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [requirements],
    extensions: DECLARATION,
  } as never)) as unknown as Record<string, unknown>;
  return { payload, requirements };
}

test("a payer with no gas and no approval: valid for both; we fund, approve and settle what was used", async () => {
  const payer = await payerHolding(devnet, 1_000_000n, devnet.permitToken.address);
  const { payload, requirements } = await uptoPayment(payer);
  const info = (payload.extensions as Record<string, { info: { signedTransaction?: Hex } }>)
    .erc20ApprovalGasSponsoring?.info;
  expect(info?.signedTransaction).toMatch(/^0x02/);

  expect(await reference.verify(payload as never, requirements as never)).toMatchObject({
    isValid: true,
  });
  const body = { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
  const verdict = await handleVerify(ours, body);
  expect(verdict.body, JSON.stringify(verdict.body)).toMatchObject({ isValid: true });

  const payee = await balanceOf(devnet.payee.address);
  const used = { ...body, paymentRequirements: { ...requirements, amount: "30000" } };
  const settled = await handleSettle(ours, used);
  expect(settled.body, JSON.stringify(settled.body)).toMatchObject({
    success: true,
    amount: "30000",
  });
  expect(await balanceOf(devnet.payee.address)).toBe(payee + 30_000n);
  const allowance = await clientsOf(devnet).publicClient.readContract({
    address: devnet.permitToken.address,
    abi: parseAbi(["function allowance(address,address) view returns (uint256)"]),
    functionName: "allowance",
    args: [payer.address, devnet.permit2],
  });
  expect(allowance).toBeGreaterThan(0n);
  // The same authorization again: never a second success.
  expect((await handleSettle(ours, used)).body).toMatchObject({ success: false });
}, 60_000);

test("an approval for another spender: refused by both, with the reference's reason", async () => {
  const payer = await payerHolding(devnet, 1_000_000n, devnet.permitToken.address);
  const { payload, requirements } = await uptoPayment(payer);
  const account = privateKeyToAccount(payer.privateKey);
  const info = (payload.extensions as Record<string, { info: Record<string, unknown> }>)
    .erc20ApprovalGasSponsoring?.info as Record<string, unknown>;
  info.signedTransaction = await account.signTransaction({
    chainId: devnet.chainId,
    to: devnet.permitToken.address,
    data: `0x095ea7b3${devnet.payee.address.slice(2).padStart(64, "0")}${"f".repeat(64)}`,
    nonce: 0,
    gas: 70_000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 100_000_000n,
  });
  const theirs = await reference.verify(payload as never, requirements as never);
  expect(theirs.isValid).toBe(false);
  const verdict = await handleVerify(ours, {
    x402Version: 2,
    paymentPayload: payload,
    paymentRequirements: requirements,
  });
  expect(verdict.body).toMatchObject({ isValid: false, invalidReason: theirs.invalidReason });
}, 60_000);
