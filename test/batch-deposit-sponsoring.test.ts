/**
 * batch-settlement Permit2 deposits with gas sponsoring (issue 26, item 1). A payer holding the
 * token, with no Permit2 approval (and no gas), deposits with the official batch client, which
 * signs an EIP-2612 permit of Permit2 (`eip2612GasSponsoring`) or its own approve(Permit2)
 * transaction (`erc20ApprovalGasSponsoring`) when the seller declares the extension. Before: we
 * refused both (`permit2_allowance_required`); the official facilitator (2.27) takes them. Now:
 * the permit rides in the deposit (the collector applies it), or the approval lands first (its
 * gas funded), then the deposit. Verdicts against the official facilitator's, on a real anvil
 * devnet with the project's batch-settlement contract, collectors and EIP-2612 token.
 */
import { x402Client } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import { BatchSettlementEvmScheme as BatchClient } from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as BatchFacilitator } from "@x402/evm/batch-settlement/facilitator";
import { parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import { SETTLEMENT_ABI, SETTLEMENT_ADDRESS } from "../src/evm/batch-settlement/constants.js";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import type { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { batchRequirements, officialSigner, x402Request } from "./helpers/batch.js";
import { chainOf, payerHolding } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { referenceSigner } from "./helpers/x402.js";

// biome-ignore lint/suspicious/noExplicitAny: wire objects are plain JSON here.
type Json = any;

const PRICE = 1_000n;
const AUTHORIZER = devAccounts[7] as DevAccount;
const EIP2612 = { eip2612GasSponsoring: { info: { description: "gasless permit", version: "1" } } };
const ERC20 = {
  erc20ApprovalGasSponsoring: { info: { description: "gasless approval", version: "1" } },
};

let devnet: Devnet;
let ours: Facilitator;
let theirs: x402Facilitator;

beforeAll(async () => {
  devnet = await startDevnet();
  ours = facilitatorOn(devnet, { receiverAuthorizer: privateKeyToAccount(AUTHORIZER.privateKey) });
  theirs = new x402Facilitator();
  theirs.register(
    devnet.network,
    new BatchFacilitator(
      referenceSigner(devnet, devAccounts[6] as DevAccount),
      privateKeyToAccount(AUTHORIZER.privateKey),
    ),
  );
  // Registered with a signer that can read but was never asked to send: verify only.
  theirs.registerExtension({
    key: "erc20ApprovalGasSponsoring",
    signer: {
      ...referenceSigner(devnet, devAccounts[6] as DevAccount),
      sendTransactions: () => Promise.reject(new Error("not in these tests")),
    },
  } as never);
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
});

const offer = () =>
  batchRequirements(devnet, {
    payTo: devnet.payee.address,
    receiverAuthorizer: AUTHORIZER.address,
    price: PRICE,
    token: devnet.permitToken as never,
    method: "permit2",
  });

/** The official client's deposit of 5 requests' worth, with the seller's declared extensions. */
async function deposit(payer: DevAccount, extensions: Record<string, unknown>) {
  const accepted = offer();
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(
    devnet.network,
    new BatchClient(officialSigner(devnet, payer), {
      depositPolicy: { depositMultiplier: 5 },
      rpcUrl: devnet.rpcUrl,
    } as never),
  );
  const payment = (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [accepted],
    extensions,
  } as never)) as Json;
  return { payment, accepted };
}

async function bothVerify(payment: Json, accepted: Json) {
  const official = await theirs.verify(payment, accepted);
  const mine = await handleVerify(ours, x402Request(accepted, payment.payload));
  const body = { ...x402Request(accepted, payment.payload), paymentPayload: payment };
  const withExtensions = await handleVerify(ours, body);
  return { official, mine: withExtensions.body, bare: mine.body };
}

const channelBalance = async (channelId: `0x${string}`) =>
  (
    await chainOf(devnet).readContract({
      address: SETTLEMENT_ADDRESS,
      abi: SETTLEMENT_ABI,
      functionName: "channels",
      args: [channelId],
    })
  )[0];

const allowance = (owner: `0x${string}`) =>
  chainOf(devnet).readContract({
    address: devnet.permitToken.address,
    abi: parseAbi(["function allowance(address,address) view returns (uint256)"]),
    functionName: "allowance",
    args: [owner, devnet.permit2],
  });

test.each([
  ["an EIP-2612 permit", EIP2612, "eip2612GasSponsoring"],
  ["a signed ERC-20 approval", ERC20, "erc20ApprovalGasSponsoring"],
])(
  "%s, no Permit2 approval: valid for both; settled, the channel funded",
  async (_, declared, key) => {
    const payer = await payerHolding(devnet, 100_000n, devnet.permitToken.address);
    const { payment, accepted } = await deposit(payer, declared);
    expect(payment.extensions?.[key]?.info, JSON.stringify(payment.extensions)).toBeDefined();
    const { official, mine } = await bothVerify(payment, accepted);
    expect(official, JSON.stringify(official)).toMatchObject({ isValid: true });
    expect(mine, JSON.stringify(mine)).toMatchObject({ isValid: true });

    const body = { ...x402Request(accepted, payment.payload), paymentPayload: payment };
    const settled = await handleSettle(ours, body);
    expect(settled.body, JSON.stringify(settled.body)).toMatchObject({ success: true });
    const channelId = payment.payload.voucher.channelId;
    expect(await channelBalance(channelId)).toBe(BigInt(payment.payload.deposit.amount));
    // The approval (max) outlives the deposit; the permit (the deposit's amount) is spent by it.
    if (key === "erc20ApprovalGasSponsoring")
      expect(await allowance(payer.address)).toBeGreaterThan(0n);
    expect((await handleSettle(ours, body)).body).toMatchObject({ success: false });
  },
  60_000,
);

test("an EIP-2612 permit for another amount than the deposit: refused by both, the official reason", async () => {
  const payer = await payerHolding(devnet, 100_000n, devnet.permitToken.address);
  const { payment, accepted } = await deposit(payer, EIP2612);
  payment.extensions.eip2612GasSponsoring.info.amount = "1";
  const { official, mine } = await bothVerify(payment, accepted);
  expect(official.invalidReason).toBe("invalid_batch_settlement_evm_eip2612_amount_mismatch");
  expect(mine).toMatchObject({ isValid: false, invalidReason: official.invalidReason });
}, 60_000);

test("an approval for another spender: refused by both, the official reason", async () => {
  const payer = await payerHolding(devnet, 100_000n, devnet.permitToken.address);
  const { payment, accepted } = await deposit(payer, ERC20);
  const account = privateKeyToAccount(payer.privateKey);
  payment.extensions.erc20ApprovalGasSponsoring.info.signedTransaction =
    await account.signTransaction({
      chainId: devnet.chainId,
      to: devnet.permitToken.address,
      data: `0x095ea7b3${devnet.payee.address.slice(2).padStart(64, "0")}${"f".repeat(64)}`,
      nonce: 0,
      gas: 70_000n,
      maxFeePerGas: 2_000_000_000n,
      maxPriorityFeePerGas: 100_000_000n,
    });
  const { official, mine } = await bothVerify(payment, accepted);
  expect(official.isValid).toBe(false);
  expect(mine).toMatchObject({ isValid: false, invalidReason: official.invalidReason });
}, 60_000);
