/**
 * The `upto` scheme through our facilitator, on the devnet's Permit2 and x402 upto proxy, with
 * payloads from the official upto client; verdicts compared with the reference upto facilitator
 * (x402 2.27) on the same payloads and chain.
 */
import { x402Client } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import { UptoEvmScheme as UptoEvmClient } from "@x402/evm/upto/client";
import { UptoEvmScheme as UptoEvmFacilitator } from "@x402/evm/upto/facilitator";
import { type Address, erc20Abi, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  devAccounts,
  startDevnet,
} from "../src/evm/devnet/index.js";
import type { Facilitator } from "../src/facilitator.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { clientsOf } from "./helpers/permit2.js";
import { referenceSigner } from "./helpers/x402.js";

const MAX = 50_000n;

let devnet: Devnet;
let ours: Facilitator;
let reference: x402Facilitator;

beforeAll(async () => {
  devnet = await startDevnet();
  ours = facilitatorOn(devnet);
  reference = new x402Facilitator();
  reference.register(
    devnet.network,
    new UptoEvmFacilitator(referenceSigner(devnet, devnet.facilitator)),
  );
  for (const payer of devnet.payers) {
    await approvePermit2(devnet, payer, devnet.permitToken.address);
  }
});
afterAll(async () => {
  await devnet?.stop();
});

function requirementsFor(facilitator: Address = devnet.facilitator.address, amount = MAX) {
  return {
    scheme: "upto",
    network: devnet.network,
    amount: amount.toString(),
    asset: devnet.permitToken.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: {
      name: devnet.permitToken.name,
      version: devnet.permitToken.version,
      facilitatorAddress: facilitator,
    },
  };
}

async function uptoPayment(payer: DevAccount, facilitator?: Address) {
  const requirements = requirementsFor(facilitator);
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(devnet.network, new UptoEvmClient(privateKeyToAccount(payer.privateKey)));
  const payload = await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [requirements],
    // biome-ignore lint/suspicious/noExplicitAny: the client's types are version unions.
  } as any);
  return { payload: payload as unknown as Record<string, unknown>, requirements };
}

const payeeBalance = () =>
  clientsOf(devnet).publicClient.readContract({
    address: devnet.permitToken.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [devnet.payee.address],
  });

describe("/supported", () => {
  test("lists upto with a facilitatorAddress of ours, each signer in turn", async () => {
    const pool = [0, 6].map((i) => privateKeyToAccount((devAccounts[i] as DevAccount).privateKey));
    const facilitator = facilitatorOn(devnet, { signer: undefined, signers: pool });
    const named = [];
    for (let i = 0; i < 2; i++) {
      const { kinds } = await facilitator.supported();
      named.push(kinds.find((k) => k.scheme === "upto")?.extra?.facilitatorAddress);
    }
    expect(named.sort()).toEqual(pool.map((a) => a.address).sort());
  });
});

describe("verify: ours and the reference's", () => {
  test("a valid maximum: valid for both", async () => {
    const pair = await uptoPayment(devnet.payers[0] as DevAccount);
    expect(await reference.verify(pair.payload as never, pair.requirements as never)).toMatchObject(
      { isValid: true },
    );
    expect((await handleVerify(ours, pair)).body).toMatchObject({ success: true });
  });

  test.each([
    ["another facilitator in the witness", "facilitator_mismatch", "upto_facilitator_mismatch"],
    ["an amount other than the maximum", "amount_mismatch", "permit2_amount_mismatch"],
    ["the exact scheme's payload", "scheme_mismatch", "invalid_upto_evm_scheme"],
  ] as const)("%s: %s for us, %s for both", async (name, code, reason) => {
    const other = privateKeyToAccount((devAccounts[7] as DevAccount).privateKey).address;
    let pair = await uptoPayment(
      devnet.payers[1] as DevAccount,
      name.startsWith("another") ? other : undefined,
    );
    if (name.startsWith("an amount")) {
      pair = { ...pair, requirements: { ...pair.requirements, amount: "1" } };
    }
    if (name.startsWith("the exact")) {
      const accepted = { ...(pair.payload.accepted as object), scheme: "exact" };
      pair = { ...pair, payload: { ...pair.payload, accepted } };
    }
    expect(await reference.verify(pair.payload as never, pair.requirements as never)).toMatchObject(
      { isValid: false, invalidReason: reason },
    );
    const x402 = await handleVerify(ours, {
      x402Version: 2,
      paymentPayload: pair.payload,
      paymentRequirements: pair.requirements,
    });
    expect(x402.body).toMatchObject({ isValid: false, invalidReason: reason });
    expect((await handleVerify(ours, pair)).body).toMatchObject({ error: code });
  });
});

describe("settle what was used", () => {
  test.each([
    ["less than the maximum", 31_415n],
    ["the maximum", MAX],
  ])("%s: that much moves, once, and the answer says how much", async (_name, amount) => {
    const pair = await uptoPayment(devnet.payers[2] as DevAccount);
    const before = await payeeBalance();
    const body = {
      payload: pair.payload,
      requirements: { ...pair.requirements, amount: amount.toString() },
    };
    const replies = await Promise.all([1, 2, 3].map(() => handleSettle(ours, body)));
    const wins = replies.filter((r) => r.body.success);
    expect(wins).toHaveLength(1);
    expect(wins[0]?.body).toMatchObject({ amount: amount.toString() });
    expect(await payeeBalance()).toBe(before + amount);
    expect((await handleSettle(ours, body)).body).toMatchObject({ error: "nonce_already_used" });
  });

  test("more than the maximum is refused with the reference's reason, nothing sent", async () => {
    const pair = await uptoPayment(devnet.payers[3] as DevAccount);
    const over = { ...pair.requirements, amount: (MAX + 1n).toString() };
    const theirs = await reference.settle(pair.payload as never, over as never);
    expect(theirs).toMatchObject({
      success: false,
      errorReason: "invalid_upto_evm_payload_settlement_exceeds_amount",
    });
    const x402 = await handleSettle(ours, {
      x402Version: 2,
      paymentPayload: pair.payload,
      paymentRequirements: over,
    });
    expect(x402.body).toMatchObject({
      success: false,
      errorReason: "invalid_upto_evm_payload_settlement_exceeds_amount",
    });
  });

  test("zero moves nothing and says so: success, no transaction, amount 0", async () => {
    const pair = await uptoPayment(devnet.payers[3] as DevAccount);
    const before = await payeeBalance();
    const reply = await handleSettle(ours, {
      x402Version: 2,
      paymentPayload: pair.payload,
      paymentRequirements: { ...pair.requirements, amount: "0" },
    });
    expect(reply.body).toMatchObject({ success: true, transaction: "", amount: "0" });
    expect(await payeeBalance()).toBe(before);
  });

  test("a pool whose second signer the witness names: that signer settles", async () => {
    const pool = [0, 6].map((i) => privateKeyToAccount((devAccounts[i] as DevAccount).privateKey));
    const facilitator = facilitatorOn(devnet, { signer: undefined, signers: pool });
    const second = pool[1]?.address as Address;
    const pair = await uptoPayment(devnet.payers[4] as DevAccount, second);
    const reply = await handleSettle(facilitator, pair);
    expect(reply.body).toMatchObject({ success: true, amount: MAX.toString() });
    const tx = await clientsOf(devnet).publicClient.getTransaction({
      hash: reply.body.transactionHash as Hex,
    });
    expect(tx.from.toLowerCase()).toBe(second.toLowerCase());
  });
});
