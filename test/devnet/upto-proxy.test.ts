/**
 * Our x402 upto Permit2 proxy: the x402 ABI, settling less than (never more than) the signed
 * maximum, only by the facilitator the payer named, with or without an EIP-2612 permit; and the
 * official upto client + reference upto facilitator on it.
 */
import { x402Client } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import { x402UptoPermit2ProxyABI } from "@x402/evm";
import { UptoEvmScheme as UptoEvmClient } from "@x402/evm/upto/client";
import { UptoEvmScheme as UptoEvmFacilitator } from "@x402/evm/upto/facilitator";
import { type Address, erc20Abi, keccak256, parseEventLogs, stringToHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testPermitTokenAbi, x402UptoPermit2ProxyAbi } from "../../src/evm/devnet/artifacts.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  permit2NonceUsed,
  startDevnet,
} from "../../src/evm/devnet/index.js";
import {
  type Permit2SignOptions,
  signEip2612GasSponsoring,
  signUptoPermit2Payment,
  type UptoPermit2PaymentJson,
} from "../../src/evm/devnet/sign-permit2.js";
import {
  abiSignatures,
  clientsOf,
  permit2612Of,
  revertOf,
  send,
  uptoProxyAbi,
} from "../helpers/permit2.js";
import { referenceSigner } from "../helpers/x402.js";

let devnet: Devnet;
const MAX = 50_000n;

beforeAll(async () => {
  devnet = await startDevnet();
  await approvePermit2(devnet, payer(0), devnet.permitToken.address);
});
afterAll(async () => {
  await devnet?.stop();
});

function payer(index: number): DevAccount {
  const account = devnet.payers[index];
  if (!account) throw new Error(`no payer ${index}`);
  return account;
}

function sign(from: DevAccount, options: Permit2SignOptions & { facilitator?: Address } = {}) {
  return signUptoPermit2Payment(
    devnet.chainId,
    from,
    {
      asset: devnet.permitToken.address,
      amount: MAX,
      payTo: devnet.payee.address,
      maxTimeoutSeconds: 300,
      facilitator: options.facilitator ?? devnet.facilitator.address,
    },
    options,
  );
}

function settleArgs(payment: UptoPermit2PaymentJson, amount: bigint, facilitator?: Address) {
  const a = payment.permit2Authorization;
  return [
    {
      permitted: { token: a.permitted.token, amount: BigInt(a.permitted.amount) },
      nonce: BigInt(a.nonce),
      deadline: BigInt(a.deadline),
    },
    amount,
    a.from,
    {
      to: a.witness.to,
      facilitator: facilitator ?? a.witness.facilitator,
      validAfter: BigInt(a.witness.validAfter),
    },
    payment.signature,
  ] as const;
}

function simulate(
  args: ReturnType<typeof settleArgs>,
  sender: Address = devnet.facilitator.address,
) {
  return clientsOf(devnet).publicClient.simulateContract({
    account: sender,
    address: devnet.uptoPermit2Proxy,
    abi: uptoProxyAbi,
    functionName: "settle",
    args,
  });
}

function payeeBalance() {
  return clientsOf(devnet).publicClient.readContract({
    address: devnet.permitToken.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [devnet.payee.address],
  });
}

describe("the x402 ABI", () => {
  it("has every function, event and error of x402UptoPermit2ProxyABI, with the same signature", () => {
    const ours = abiSignatures(x402UptoPermit2ProxyAbi);
    const theirs = abiSignatures(x402UptoPermit2ProxyABI);
    // 5 functions, 2 events, 8 errors: InvalidAmount (amount 0) is not in the SDK's upto ABI.
    expect(theirs.size).toBe(15);
    for (const signature of theirs) expect(ours).toContain(signature);
  });

  it("has the upto witness type (with the facilitator)", async () => {
    const read = (functionName: "WITNESS_TYPE_STRING" | "WITNESS_TYPEHASH") =>
      clientsOf(devnet).publicClient.readContract({
        address: devnet.uptoPermit2Proxy,
        abi: x402UptoPermit2ProxyAbi,
        functionName,
      });
    const typeString = await read("WITNESS_TYPE_STRING");
    expect(typeString).toBe(
      "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)",
    );
    expect(await read("WITNESS_TYPEHASH")).toBe(
      keccak256(stringToHex("Witness(address to,address facilitator,uint256 validAfter)")),
    );
    // The full type Permit2 hashes, as the x402 spec gives it (0x51dff697…70c2ee).
    const full = `PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,${typeString}`;
    expect(keccak256(stringToHex(full))).toMatch(/^0x51dff697[0-9a-f]{50}70c2ee$/);
  });
});

describe("settle", () => {
  it("moves exactly the amount asked (less than permitted) and uses up the nonce", async () => {
    const payment = await sign(payer(0));
    const before = await payeeBalance();
    const receipt = await send(devnet, devnet.facilitator, {
      address: devnet.uptoPermit2Proxy,
      abi: uptoProxyAbi,
      functionName: "settle",
      args: settleArgs(payment, 12_345n),
    });
    expect(await payeeBalance()).toBe(before + 12_345n);
    const events = parseEventLogs({
      abi: [...testPermitTokenAbi, ...x402UptoPermit2ProxyAbi],
      logs: receipt.logs,
    });
    expect(events.map((e) => e.eventName)).toEqual(["Transfer", "Settled"]);
    const nonce = BigInt(payment.permit2Authorization.nonce);
    expect(await permit2NonceUsed(devnet, payer(0).address, nonce)).toBe(true);
    // The rest of the maximum cannot be taken later: the nonce is spent.
    expect(await revertOf(simulate(settleArgs(payment, 1n)))).toEqual({
      name: "InvalidNonce",
      args: [],
    });
  });

  it("refuses more than permitted, another caller than the named facilitator, and nothing", async () => {
    const payment = await sign(payer(0));
    expect(await revertOf(simulate(settleArgs(payment, MAX + 1n)))).toEqual({
      name: "AmountExceedsPermitted",
      args: [],
    });
    expect(await revertOf(simulate(settleArgs(payment, MAX), devnet.payee.address))).toEqual({
      name: "UnauthorizedFacilitator",
      args: [],
    });
    // Both wrong: the amount is checked first.
    expect(await revertOf(simulate(settleArgs(payment, MAX + 1n), devnet.payee.address))).toEqual({
      name: "AmountExceedsPermitted",
      args: [],
    });
    expect(await revertOf(simulate(settleArgs(payment, 0n)))).toEqual({
      name: "InvalidAmount",
      args: [],
    });
    // Claiming to be the facilitator the payer named does not help: the signature says who.
    const stranger = devnet.payee.address;
    expect(await revertOf(simulate(settleArgs(payment, MAX, stranger), stranger))).toEqual({
      name: "InvalidSigner",
      args: [],
    });
    await simulate(settleArgs(payment, MAX)); // and the right one still can
  });

  it("settleWithPermit: approves Permit2 for the maximum and settles less, in one transaction", async () => {
    const from = payer(1);
    const payment = await sign(from);
    const deadline = BigInt(payment.permit2Authorization.deadline);
    const info = await signEip2612GasSponsoring(devnet, from, devnet.permitToken, MAX, deadline);
    const before = await payeeBalance();
    await send(devnet, devnet.facilitator, {
      address: devnet.uptoPermit2Proxy,
      abi: uptoProxyAbi,
      functionName: "settleWithPermit",
      args: [permit2612Of(info), ...settleArgs(payment, 7_000n)],
    });
    expect(await payeeBalance()).toBe(before + 7_000n);

    // A permit for the settled amount instead of the permitted maximum is refused.
    const next = await sign(from);
    const short = await signEip2612GasSponsoring(
      devnet,
      from,
      devnet.permitToken,
      7_000n,
      BigInt(next.permit2Authorization.deadline),
    );
    const mismatch = clientsOf(devnet).publicClient.simulateContract({
      account: devnet.facilitator.address,
      address: devnet.uptoPermit2Proxy,
      abi: uptoProxyAbi,
      functionName: "settleWithPermit",
      args: [permit2612Of(short), ...settleArgs(next, 7_000n)],
    });
    expect(await revertOf(mismatch)).toEqual({ name: "Permit2612AmountMismatch", args: [] });
  });
});

describe("official upto client → reference upto facilitator", () => {
  it("verifies the maximum, then settles the actual amount on our upto proxy", async () => {
    const from = payer(2);
    await approvePermit2(devnet, from, devnet.permitToken.address);
    const facilitator = new x402Facilitator();
    const scheme = new UptoEvmFacilitator(referenceSigner(devnet, devnet.facilitator));
    facilitator.register(devnet.network, scheme);
    const requirements = {
      scheme: "upto",
      network: devnet.network,
      amount: MAX.toString(),
      asset: devnet.permitToken.address,
      payTo: devnet.payee.address,
      maxTimeoutSeconds: 300,
      extra: {
        name: devnet.permitToken.name,
        version: devnet.permitToken.version,
        ...scheme.getExtra(devnet.network),
      },
    };
    expect(requirements.extra).toMatchObject({ facilitatorAddress: devnet.facilitator.address });
    const client = x402Client.fromConfig({ schemes: [], spendControls: false });
    client.register(devnet.network, new UptoEvmClient(privateKeyToAccount(from.privateKey)));
    const payload = await client.createPaymentPayload({
      x402Version: 2,
      resource: { url: "http://localhost/metered" },
      accepts: [requirements],
      // biome-ignore lint/suspicious/noExplicitAny: the client's types are version unions.
    } as any);
    expect(payload.payload).toMatchObject({
      permit2Authorization: {
        spender: devnet.uptoPermit2Proxy,
        witness: { facilitator: devnet.facilitator.address },
      },
    });

    expect(await facilitator.verify(payload, requirements)).toMatchObject({ isValid: true });
    const before = await payeeBalance();
    const settled = await facilitator.settle(payload, { ...requirements, amount: "31415" });
    expect(settled).toMatchObject({ success: true, amount: "31415" });
    expect(await payeeBalance()).toBe(before + 31_415n);
  });
});
