/**
 * A hostile erc20ApprovalGasSponsoring info: fields of the wrong type or form, a transaction that
 * is not one, calldata cut short. Each is refused with the reference facilitator's reason (the
 * extension registered on it), and a settle of it sends nothing from our key: no gas funded.
 */
import { type Address, encodeFunctionData, type Hex, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
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
let payer: DevAccount;
/** The official client's payment, with its signed approval: each case spoils one part. */
let payment: { payload: Record<string, unknown>; requirements: unknown };

beforeAll(async () => {
  devnet = await startDevnet();
  ours = facilitatorOn(devnet);
  reference = referenceFacilitator(devnet, devnet.payee);
  verifyApprovalsOn(reference, devnet, devnet.payee);
  payer = await payerHolding(devnet, 1_000_000n, devnet.permitToken.address);
  const requirements = permit2Requirements(devnet, devnet.permitToken);
  const payload = await officialPermit2Payload(devnet, payer, requirements, {
    erc20ApprovalGasSponsoring: true,
  });
  payment = { payload: payload as unknown as Record<string, unknown>, requirements };
});
afterAll(async () => {
  await devnet?.stop();
});

/** The payment with its approval info's fields replaced. */
function withInfo(change: Record<string, unknown>) {
  const copy = JSON.parse(JSON.stringify(payment)) as typeof payment;
  const extensions = copy.payload.extensions as Record<string, { info: Record<string, unknown> }>;
  const entry = extensions.erc20ApprovalGasSponsoring;
  if (!entry) throw new Error("the official client signed no approval");
  Object.assign(entry.info, change);
  return copy;
}

/** An approval signed by the payer with the calldata given: a real transaction, odd contents. */
async function signedWithData(data: Hex): Promise<Hex> {
  return privateKeyToAccount(payer.privateKey).signTransaction({
    chainId: devnet.chainId,
    to: devnet.permitToken.address,
    data,
    nonce: 0,
    gas: 70_000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 100_000_000n,
  });
}

const sentByUs = () =>
  clientsOf(devnet).publicClient.getTransactionCount({
    address: devnet.facilitator.address as Address,
    blockTag: "pending",
  });

const FORMAT = "invalid_erc20_approval_extension_format";

describe("a malformed approval info", () => {
  const approveCall = () =>
    encodeFunctionData({
      abi: parseAbi(["function approve(address,uint256)"]),
      args: [devnet.permit2, 1n],
    });
  const cases: {
    name: string;
    change: () => Promise<Record<string, unknown>> | Record<string, unknown>;
    reason: string;
  }[] = [
    { name: "from not an address", change: () => ({ from: "0x1234" }), reason: FORMAT },
    { name: "from a number", change: () => ({ from: 12345 }), reason: FORMAT },
    { name: "amount negative", change: () => ({ amount: "-1" }), reason: FORMAT },
    {
      name: "signedTransaction not hex",
      change: () => ({ signedTransaction: "not a transaction" }),
      reason: FORMAT,
    },
    {
      name: "signedTransaction an object",
      change: () => ({ signedTransaction: { raw: "0x02" } }),
      reason: FORMAT,
    },
    {
      name: "signedTransaction hex that is no transaction",
      change: () => ({ signedTransaction: "0x02ff" }),
      reason: "erc20_approval_tx_parse_failed",
    },
    {
      name: "calldata cut short",
      change: async () => ({
        signedTransaction: await signedWithData(approveCall().slice(0, 20) as Hex),
      }),
      reason: "erc20_approval_tx_invalid_calldata",
    },
    {
      name: "another function called",
      change: async () => ({ signedTransaction: await signedWithData("0xa9059cbb") }),
      reason: "erc20_approval_tx_wrong_selector",
    },
  ];
  test.each(cases)(
    "$name: $reason for both, and a settle sends nothing",
    async ({ change, reason }) => {
      const pair = withInfo(await change());
      expect(
        await reference.verify(pair.payload as never, pair.requirements as never),
      ).toMatchObject({ isValid: false, invalidReason: reason });
      const x402 = await handleVerify(ours, {
        x402Version: 2,
        paymentPayload: pair.payload,
        paymentRequirements: pair.requirements,
      });
      expect(x402.status).toBe(200);
      expect(x402.body).toMatchObject({ isValid: false, invalidReason: reason });

      const before = await sentByUs();
      const settled = await handleSettle(ours, pair);
      expect(settled.body).toMatchObject({ success: false, error: "invalid_extension" });
      expect(await sentByUs()).toBe(before);
    },
  );
});
