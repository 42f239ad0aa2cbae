/**
 * Our own Permit2 signers (src/evm/devnet/sign-permit2.ts, used by the sample requests) sign exactly
 * what the official x402 client signs: given the client's random nonce and its deadline they
 * reproduce its payload byte for byte, and the reference facilitator accepts the sample requests.
 */
import { erc20Abi } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  permit2Allowance,
  startDevnet,
} from "../../src/evm/devnet/index.js";
import { signSampleRequest } from "../../src/evm/devnet/sample.js";
import {
  type Permit2PaymentJson,
  signEip2612GasSponsoring,
  signPermit2Payment,
} from "../../src/evm/devnet/sign-permit2.js";
import { clientsOf, officialPermit2Payload, permit2Requirements } from "../helpers/permit2.js";
import { referenceFacilitator } from "../helpers/x402.js";

let devnet: Devnet;
let reference: ReturnType<typeof referenceFacilitator>;

beforeAll(async () => {
  devnet = await startDevnet();
  reference = referenceFacilitator(devnet, devnet.facilitator);
});
afterAll(async () => {
  await devnet?.stop();
});

function payer(index: number): DevAccount {
  const account = devnet.payers[index];
  if (!account) throw new Error(`no payer ${index}`);
  return account;
}

describe("our Permit2 signer and the official client", () => {
  it("sign the same payload, byte for byte (TestUSDC, TestPermitToken, TestPlainToken)", async () => {
    for (const token of [devnet.token, devnet.permitToken, devnet.plainToken]) {
      const requirements = permit2Requirements(devnet, token, { amount: "123456" });
      const official = await officialPermit2Payload(devnet, payer(0), requirements);
      const theirs = official.payload as unknown as Permit2PaymentJson;
      const ours = await signPermit2Payment(
        devnet.chainId,
        payer(0),
        {
          asset: requirements.asset,
          amount: BigInt(requirements.amount),
          payTo: requirements.payTo,
          maxTimeoutSeconds: requirements.maxTimeoutSeconds,
        },
        {
          nonce: BigInt(theirs.permit2Authorization.nonce),
          deadline: BigInt(theirs.permit2Authorization.deadline),
        },
      );
      expect(JSON.stringify(ours)).toBe(JSON.stringify(theirs));
    }
  });

  it("sign the same eip2612GasSponsoring permit", async () => {
    const token = devnet.permitToken;
    const requirements = permit2Requirements(devnet, token);
    const official = await officialPermit2Payload(devnet, payer(1), requirements, {
      eip2612GasSponsoring: true,
    });
    const theirs = official.extensions?.eip2612GasSponsoring as {
      info: Record<string, string>;
    };
    const deadline = (official.payload as unknown as Permit2PaymentJson).permit2Authorization
      .deadline;
    const ours = await signEip2612GasSponsoring(
      devnet,
      payer(1),
      token,
      BigInt(requirements.amount),
      BigInt(deadline),
    );
    // The client merges the server's declaration (a description here) into the info it signs.
    const { description, ...signed } = theirs.info;
    expect(description).toEqual(expect.any(String));
    expect(signed).toEqual(ours);
    expect(Object.keys(ours)).toEqual([
      "from",
      "asset",
      "spender",
      "amount",
      "nonce",
      "deadline",
      "signature",
      "version",
    ]);
  });
});

describe("sample requests (src/evm/devnet/sample.ts) on the reference facilitator", () => {
  it("a Permit2 payment of the permit token, once the payer approved Permit2: verified and settled", async () => {
    const from = payer(2);
    await approvePermit2(devnet, from, devnet.permitToken.address);
    const request = await signSampleRequest(devnet, {
      payer: from,
      method: "permit2",
      asset: "permit",
      dialect: "x402",
    });
    const { paymentPayload, paymentRequirements } = request as {
      paymentPayload: unknown;
      paymentRequirements: { extra: unknown };
    };
    expect(paymentRequirements.extra).toEqual({
      name: "Permit Token",
      version: "1",
      assetTransferMethod: "permit2",
    });
    // biome-ignore lint/suspicious/noExplicitAny: the reference's types are version unions.
    const [p, r] = [paymentPayload as any, paymentRequirements as any];
    expect(await reference.verify(p, r)).toMatchObject({ isValid: true, payer: from.address });
    expect(await reference.settle(p, r)).toMatchObject({ success: true });
  });

  it("a Permit2 payment with the eip2612GasSponsoring extension: settled with no prior approval", async () => {
    const from = payer(3);
    expect(await permit2Allowance(devnet, from.address, devnet.permitToken.address)).toBe(0n);
    const request = await signSampleRequest(devnet, {
      payer: from,
      method: "permit2",
      asset: "permit",
      eip2612GasSponsoring: true,
      amount: 2_500n,
    });
    if (!("requirements" in request)) throw new Error("expected the reference dialect");
    // biome-ignore lint/suspicious/noExplicitAny: as above.
    const [p, r] = [request.payload as any, request.requirements as any];
    expect(p.extensions.eip2612GasSponsoring.info).toMatchObject({
      from: from.address,
      spender: devnet.permit2,
      amount: "2500",
      version: "1",
    });
    expect(await reference.verify(p, r)).toMatchObject({ isValid: true });
    const before = await clientsOf(devnet).publicClient.readContract({
      address: devnet.permitToken.address,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [devnet.payee.address],
    });
    expect(await reference.settle(p, r)).toMatchObject({ success: true });
    const after = await clientsOf(devnet).publicClient.readContract({
      address: devnet.permitToken.address,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [devnet.payee.address],
    });
    expect(after - before).toBe(2_500n);
  });

  it("refuses what cannot be: EIP-3009 on the permit token, sponsoring the plain token, Permit2 in v1", async () => {
    const from = payer(4);
    await expect(signSampleRequest(devnet, { payer: from, asset: "permit" })).rejects.toThrow(
      /no EIP-3009/,
    );
    await expect(
      signSampleRequest(devnet, {
        payer: from,
        method: "permit2",
        asset: "plain",
        eip2612GasSponsoring: true,
      }),
    ).rejects.toThrow(/no EIP-2612/);
    await expect(
      signSampleRequest(devnet, { payer: from, method: "permit2", x402Version: 1 }),
    ).rejects.toThrow(/v2 only/);
  });
});
