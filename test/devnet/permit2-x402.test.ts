/**
 * The compatibility proof: payloads made by the official x402 client (@x402/evm 2.27, Permit2
 * requirements) are verified and settled by the official reference facilitator on OUR Permit2,
 * exact proxy and test tokens, exactly as on a real chain with the canonical contracts.
 */
import { decodeFunctionData, erc20Abi, parseEventLogs } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testPermitTokenAbi, x402ExactPermit2ProxyAbi } from "../../src/evm/devnet/artifacts.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  permit2Allowance,
  permit2NonceUsed,
  startDevnet,
} from "../../src/evm/devnet/index.js";
import type { Permit2PaymentJson } from "../../src/evm/devnet/sign-permit2.js";
import {
  clientsOf,
  exactProxyAbi,
  exactSettleArgs,
  officialPermit2Payload,
  type PermitToken,
  permit2Requirements,
  revertOf,
} from "../helpers/permit2.js";
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

function balanceOf(token: PermitToken, who: `0x${string}`) {
  return clientsOf(devnet).publicClient.readContract({
    address: token.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });
}

/** The eip2612GasSponsoring info of a payload's extensions (throws if there is none). */
function sponsoringInfo(extensions: Record<string, unknown> | undefined): Record<string, string> {
  const extension = extensions?.eip2612GasSponsoring as { info?: Record<string, string> };
  if (!extension?.info) throw new Error("no eip2612GasSponsoring info");
  return extension.info;
}

function tokens(): Record<"TestPermitToken" | "TestUSDC" | "TestPlainToken", PermitToken> {
  return {
    TestPermitToken: devnet.permitToken,
    TestUSDC: devnet.token,
    TestPlainToken: devnet.plainToken,
  };
}

describe("official client → reference facilitator, payer approved Permit2", () => {
  it.each([
    ["TestPermitToken", 0],
    ["TestUSDC", 1],
    ["TestPlainToken", 2],
  ] as const)(
    "%s: verified, settled through our exact proxy; a replay reverts with InvalidNonce",
    async (name, index) => {
      const token = tokens()[name];
      const from = payer(index);
      await approvePermit2(devnet, from, token.address);
      const requirements = permit2Requirements(devnet, token);
      const payload = await officialPermit2Payload(devnet, from, requirements);
      const payment = payload.payload as unknown as Permit2PaymentJson;
      expect(payment.permit2Authorization.spender).toBe(devnet.exactPermit2Proxy);

      expect(await reference.verify(payload, requirements)).toMatchObject({
        isValid: true,
        payer: from.address,
      });
      const payeeBefore = await balanceOf(token, devnet.payee.address);
      const payerBefore = await balanceOf(token, from.address);
      const settled = await reference.settle(payload, requirements);
      expect(settled).toMatchObject({
        success: true,
        network: devnet.network,
        payer: from.address,
      });

      expect(await balanceOf(token, devnet.payee.address)).toBe(payeeBefore + 10_000n);
      expect(await balanceOf(token, from.address)).toBe(payerBefore - 10_000n);
      const nonce = BigInt(payment.permit2Authorization.nonce);
      expect(await permit2NonceUsed(devnet, from.address, nonce)).toBe(true);

      const { publicClient } = clientsOf(devnet);
      const receipt = await publicClient.getTransactionReceipt({
        hash: settled.transaction as `0x${string}`,
      });
      expect(receipt.to?.toLowerCase()).toBe(devnet.exactPermit2Proxy.toLowerCase());
      const events = parseEventLogs({ abi: x402ExactPermit2ProxyAbi, logs: receipt.logs });
      expect(events.map((e) => e.eventName)).toEqual(["Settled"]);

      // The same payment again: Permit2 refuses the used nonce.
      const replay = publicClient.simulateContract({
        account: devnet.facilitator.address,
        address: devnet.exactPermit2Proxy,
        abi: exactProxyAbi,
        functionName: "settle",
        args: exactSettleArgs(payment),
      });
      expect(await revertOf(replay)).toEqual({ name: "InvalidNonce", args: [] });
      // The reference sees the simulation fail and finds nothing more specific to blame.
      expect(await reference.verify(payload, requirements)).toMatchObject({
        isValid: false,
        invalidReason: "permit2_simulation_failed",
      });
      const again = await reference.settle(payload, requirements);
      expect(again.success).toBe(false);
      // Its ABI lacks Permit2's errors, so the reason carries the raw revert, not a name.
      expect(again.errorReason).toMatch(/^invalid_exact_evm_transaction_failed: /);
    },
  );

  it("without an approval, the reference answers permit2_allowance_required", async () => {
    const token = devnet.permitToken;
    const from = payer(3);
    expect(await permit2Allowance(devnet, from.address, token.address)).toBe(0n);
    const requirements = permit2Requirements(devnet, token);
    const payload = await officialPermit2Payload(devnet, from, requirements);
    expect(payload.extensions).toBeUndefined();
    expect(await reference.verify(payload, requirements)).toMatchObject({
      isValid: false,
      invalidReason: "permit2_allowance_required",
    });
  });
});

describe("official client → reference facilitator, eip2612GasSponsoring, no prior approval", () => {
  it.each([
    ["TestPermitToken", 3],
    ["TestUSDC", 4],
  ] as const)("%s: settleWithPermit approves and pays in one transaction", async (name, index) => {
    const token = tokens()[name];
    const from = payer(index);
    expect(await permit2Allowance(devnet, from.address, token.address)).toBe(0n);
    const requirements = permit2Requirements(devnet, token);
    const payload = await officialPermit2Payload(devnet, from, requirements, {
      eip2612GasSponsoring: true,
    });
    const payment = payload.payload as unknown as Permit2PaymentJson;
    const info = sponsoringInfo(payload.extensions);
    expect(info).toMatchObject({
      from: from.address,
      asset: token.address,
      spender: devnet.permit2,
      amount: "10000",
      nonce: "0",
      deadline: payment.permit2Authorization.deadline,
      version: "1",
    });
    expect(info.signature).toMatch(/^0x[0-9a-f]{130}$/);

    expect(await reference.verify(payload, requirements)).toMatchObject({ isValid: true });
    const payeeBefore = await balanceOf(token, devnet.payee.address);
    const settled = await reference.settle(payload, requirements);
    expect(settled).toMatchObject({ success: true, payer: from.address });
    expect(await balanceOf(token, devnet.payee.address)).toBe(payeeBefore + 10_000n);

    // One transaction: settleWithPermit on the exact proxy, which applied the permit (allowance
    // 10000, then spent) and moved the money.
    const { publicClient } = clientsOf(devnet);
    const tx = await publicClient.getTransaction({ hash: settled.transaction as `0x${string}` });
    expect(tx.to?.toLowerCase()).toBe(devnet.exactPermit2Proxy.toLowerCase());
    const call = decodeFunctionData({ abi: x402ExactPermit2ProxyAbi, data: tx.input });
    expect(call.functionName).toBe("settleWithPermit");
    const receipt = await publicClient.getTransactionReceipt({ hash: tx.hash });
    const events = parseEventLogs({
      abi: [...testPermitTokenAbi, ...x402ExactPermit2ProxyAbi],
      logs: receipt.logs,
    });
    expect(events.map((e) => e.eventName)).toEqual(["Approval", "Transfer", "SettledWithPermit"]);
    expect(await permit2Allowance(devnet, from.address, token.address)).toBe(0n);
    expect(
      await publicClient.readContract({
        address: token.address,
        abi: testPermitTokenAbi,
        functionName: "nonces",
        args: [from.address],
      }),
    ).toBe(1n);
    expect(
      await permit2NonceUsed(devnet, from.address, BigInt(payment.permit2Authorization.nonce)),
    ).toBe(true);
  });

  it("the client signs no permit when the payer's approval already covers the payment", async () => {
    const token = devnet.permitToken;
    const from = payer(0); // approved Permit2 (unlimited) above
    const requirements = permit2Requirements(devnet, token);
    const payload = await officialPermit2Payload(devnet, from, requirements, {
      eip2612GasSponsoring: true,
    });
    expect(payload.extensions?.eip2612GasSponsoring).not.toHaveProperty("info.signature");
  });
});
