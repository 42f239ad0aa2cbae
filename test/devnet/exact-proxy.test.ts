/**
 * Our x402 exact Permit2 proxy (with our Permit2 behind it), called directly: the x402 ABI, what
 * settle and settleWithPermit move, and every reason they revert with, by name.
 */
import { x402ExactPermit2ProxyABI } from "@x402/evm";
import {
  type Address,
  createTestClient,
  createWalletClient,
  erc20Abi,
  http,
  keccak256,
  maxUint256,
  parseEther,
  parseEventLogs,
  stringToHex,
  zeroAddress,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testPermitTokenAbi, x402ExactPermit2ProxyAbi } from "../../src/evm/devnet/artifacts.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  deployErc1271Wallet,
  devnetChain,
  startDevnet,
} from "../../src/evm/devnet/index.js";
import {
  type Permit2SignOptions,
  signEip2612GasSponsoring,
  signPermit2Payment,
} from "../../src/evm/devnet/sign-permit2.js";
import {
  abiSignatures,
  clientsOf,
  exactProxyAbi,
  exactSettleArgs,
  type PermitToken,
  permit2612Of,
  revertOf,
  send,
} from "../helpers/permit2.js";

let devnet: Devnet;
const AMOUNT = 10_000n;
const now = () => BigInt(Math.floor(Date.now() / 1000));

beforeAll(async () => {
  devnet = await startDevnet();
  await approvePermit2(devnet, payer(0), devnet.permitToken.address);
  await approvePermit2(devnet, payer(0), devnet.plainToken.address);
});
afterAll(async () => {
  await devnet?.stop();
});

function payer(index: number): DevAccount {
  const account = devnet.payers[index];
  if (!account) throw new Error(`no payer ${index}`);
  return account;
}

function sign(
  from: DevAccount,
  options: Permit2SignOptions & { amount?: bigint; to?: Address; token?: PermitToken } = {},
) {
  const token = options.token ?? devnet.permitToken;
  return signPermit2Payment(
    devnet.chainId,
    from,
    {
      asset: token.address,
      amount: options.amount ?? AMOUNT,
      payTo: options.to ?? devnet.payee.address,
      maxTimeoutSeconds: 300,
    },
    options,
  );
}

function simulateSettle(args: ReturnType<typeof exactSettleArgs>) {
  return clientsOf(devnet).publicClient.simulateContract({
    account: devnet.facilitator.address,
    address: devnet.exactPermit2Proxy,
    abi: exactProxyAbi,
    functionName: "settle",
    args,
  });
}

function balanceOf(token: Address, who: Address) {
  return clientsOf(devnet).publicClient.readContract({
    address: token,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });
}

describe("the x402 ABI", () => {
  it("has every function, event and error of x402ExactPermit2ProxyABI, with the same signature", () => {
    const ours = abiSignatures(x402ExactPermit2ProxyAbi);
    const theirs = abiSignatures(x402ExactPermit2ProxyABI);
    expect(theirs.size).toBe(14); // 5 functions, 2 events, 7 errors
    for (const signature of theirs) expect(ours).toContain(signature);
  });

  it("PERMIT2(), WITNESS_TYPE_STRING and WITNESS_TYPEHASH are the canonical ones", async () => {
    const { publicClient } = clientsOf(devnet);
    const read = (functionName: "PERMIT2" | "WITNESS_TYPE_STRING" | "WITNESS_TYPEHASH") =>
      publicClient.readContract({
        address: devnet.exactPermit2Proxy,
        abi: x402ExactPermit2ProxyAbi,
        functionName,
      });
    expect(await read("PERMIT2")).toBe("0x000000000022D473030F116dDEE9F6B43aC78BA3");
    const typeString = await read("WITNESS_TYPE_STRING");
    expect(typeString).toBe(
      "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)",
    );
    expect(await read("WITNESS_TYPEHASH")).toBe(
      keccak256(stringToHex("Witness(address to,uint256 validAfter)")),
    );
    // The full type Permit2 hashes, as the x402 spec gives it (0xebc156cd…f521c7).
    const full = `PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,${typeString}`;
    expect(keccak256(stringToHex(full))).toMatch(/^0xebc156cd[0-9a-f]{50}f521c7$/);
  });
});

describe("settle", () => {
  it("moves exactly the permitted amount from the owner to witness.to, whoever calls, and emits Settled()", async () => {
    const payment = await sign(payer(0));
    const payeeBefore = await balanceOf(devnet.permitToken.address, devnet.payee.address);
    // The payee, not the facilitator, sends it: the exact proxy lets anyone settle.
    const receipt = await send(devnet, devnet.payee, {
      address: devnet.exactPermit2Proxy,
      abi: exactProxyAbi,
      functionName: "settle",
      args: exactSettleArgs(payment),
    });
    expect(receipt.status).toBe("success");
    expect(await balanceOf(devnet.permitToken.address, devnet.payee.address)).toBe(
      payeeBefore + AMOUNT,
    );
    const events = parseEventLogs({
      abi: [...testPermitTokenAbi, ...x402ExactPermit2ProxyAbi],
      logs: receipt.logs,
    });
    expect(events.map((e) => e.eventName)).toEqual(["Transfer", "Settled"]);
    expect(events[0]?.args).toEqual({
      from: payer(0).address,
      to: devnet.payee.address,
      value: AMOUNT,
    });
  });

  it.each([
    ["amount 0", "InvalidAmount", { amount: 0n }, {}],
    ["owner 0", "InvalidOwner", {}, { owner: zeroAddress }],
    ["witness.to 0", "InvalidDestination", { to: zeroAddress }, {}],
    ["validAfter in the future", "PaymentTooEarly", { validAfter: 10n ** 12n }, {}],
  ] as const)("refuses %s with %s", async (_, error, signing, changes) => {
    const payment = await sign(payer(0), signing);
    expect(await revertOf(simulateSettle(exactSettleArgs(payment, changes)))).toEqual({
      name: error,
      args: [],
    });
  });

  it("passes on Permit2's reasons: SignatureExpired, InvalidSigner, InvalidNonce, TRANSFER_FROM_FAILED", async () => {
    const expired = now() - 10n;
    expect(
      await revertOf(simulateSettle(exactSettleArgs(await sign(payer(0), { deadline: expired })))),
    ).toEqual({
      name: "SignatureExpired",
      args: [expired],
    });
    const invalidSigner = { name: "InvalidSigner", args: [] };
    // Signed by another key for payer 0's tokens.
    const forged = await sign(payer(1), { from: payer(0).address });
    expect(await revertOf(simulateSettle(exactSettleArgs(forged)))).toEqual(invalidSigner);
    // The destination changed after signing: the witness no longer matches the signature.
    const redirected = exactSettleArgs(await sign(payer(0)), { to: devnet.facilitator.address });
    expect(await revertOf(simulateSettle(redirected))).toEqual(invalidSigner);
    // Signed for the upto proxy as spender.
    const elsewhere = await sign(payer(0), { spender: devnet.uptoPermit2Proxy });
    expect(await revertOf(simulateSettle(exactSettleArgs(elsewhere)))).toEqual(invalidSigner);

    const payment = await sign(payer(0));
    await send(devnet, devnet.facilitator, {
      address: devnet.exactPermit2Proxy,
      abi: exactProxyAbi,
      functionName: "settle",
      args: exactSettleArgs(payment),
    });
    expect(await revertOf(simulateSettle(exactSettleArgs(payment)))).toEqual({
      name: "InvalidNonce",
      args: [],
    });

    // No approval of Permit2 (payer 2), or not enough money: the token's refusal, as Permit2 words it.
    const transferFailed = { name: "TRANSFER_FROM_FAILED", args: [] };
    expect(await revertOf(simulateSettle(exactSettleArgs(await sign(payer(2)))))).toEqual(
      transferFailed,
    );
    const tooMuch = await sign(payer(0), { amount: 2_000_000n * 10n ** 6n });
    expect(await revertOf(simulateSettle(exactSettleArgs(tooMuch)))).toEqual(transferFailed);
  });

  it("accepts an EIP-1271 owner (TestERC1271Wallet) and refuses what the wallet refuses", async () => {
    const owner = payer(3);
    const wallet = await deployErc1271Wallet(devnet, owner.address);
    await approveAsContract(wallet, devnet.token.address);
    const payment = await sign(owner, { from: wallet, token: devnet.token });
    const before = await balanceOf(devnet.token.address, wallet);
    await send(devnet, devnet.facilitator, {
      address: devnet.exactPermit2Proxy,
      abi: exactProxyAbi,
      functionName: "settle",
      args: exactSettleArgs(payment),
    });
    expect(await balanceOf(devnet.token.address, wallet)).toBe(before - AMOUNT);

    const notTheOwner = await sign(payer(4), { from: wallet, token: devnet.token });
    expect(await revertOf(simulateSettle(exactSettleArgs(notTheOwner)))).toEqual({
      name: "InvalidContractSignature",
      args: [],
    });
  });
});

describe("settleWithPermit", () => {
  async function withPermit(
    from: DevAccount,
    options: { value?: bigint; token?: PermitToken; permitSigner?: DevAccount } = {},
  ) {
    const token = options.token ?? devnet.permitToken;
    const payment = await sign(from, { token });
    const deadline = BigInt(payment.permit2Authorization.deadline);
    const permitToken = { address: token.address, name: token.name, version: token.version ?? "1" };
    const info = await signEip2612GasSponsoring(
      devnet,
      options.permitSigner ?? from,
      permitToken,
      options.value ?? AMOUNT,
      deadline,
      // The plain token has no nonces(): sign with nonce 0, the permit fails anyway.
      token.address === devnet.plainToken.address ? 0n : undefined,
    );
    return {
      payment,
      permit2612: permit2612Of(info),
      args: [permit2612Of(info), ...exactSettleArgs(payment)] as const,
    };
  }

  function simulateWithPermit(args: Awaited<ReturnType<typeof withPermit>>["args"]) {
    return clientsOf(devnet).publicClient.simulateContract({
      account: devnet.facilitator.address,
      address: devnet.exactPermit2Proxy,
      abi: exactProxyAbi,
      functionName: "settleWithPermit",
      args,
    });
  }

  it("applies the payer's EIP-2612 approval of Permit2 and settles in one transaction", async () => {
    const { args } = await withPermit(payer(1));
    const before = await balanceOf(devnet.permitToken.address, devnet.payee.address);
    const receipt = await send(devnet, devnet.facilitator, {
      address: devnet.exactPermit2Proxy,
      abi: exactProxyAbi,
      functionName: "settleWithPermit",
      args,
    });
    expect(await balanceOf(devnet.permitToken.address, devnet.payee.address)).toBe(before + AMOUNT);
    const events = parseEventLogs({
      abi: [...testPermitTokenAbi, ...x402ExactPermit2ProxyAbi],
      logs: receipt.logs,
    });
    expect(events.map((e) => e.eventName)).toEqual(["Approval", "Transfer", "SettledWithPermit"]);
  });

  it("refuses a permit for another amount than the permitted one (Permit2612AmountMismatch)", async () => {
    const { args } = await withPermit(payer(1), { value: maxUint256 });
    expect(await revertOf(simulateWithPermit(args))).toEqual({
      name: "Permit2612AmountMismatch",
      args: [],
    });
  });

  it("still settles when the permit was already applied (front-run) or fails but an approval exists", async () => {
    // Someone applies the payer's permit first: the proxy's own permit call then fails, quietly.
    const frontRun = await withPermit(payer(1));
    const p = frontRun.permit2612;
    await send(devnet, devnet.payee, {
      address: devnet.permitToken.address,
      abi: testPermitTokenAbi,
      functionName: "permit",
      args: [payer(1).address, devnet.permit2, p.value, p.deadline, p.v, p.r, p.s],
    });
    expect(
      (
        await send(devnet, devnet.facilitator, {
          address: devnet.exactPermit2Proxy,
          abi: exactProxyAbi,
          functionName: "settleWithPermit",
          args: frontRun.args,
        })
      ).status,
    ).toBe("success");
    // A permit signed by the wrong key, from a payer who approved Permit2 anyway.
    const approved = await withPermit(payer(0), { permitSigner: payer(4) });
    await simulateWithPermit(approved.args);
    // The plain token has no permit() at all.
    await simulateWithPermit((await withPermit(payer(0), { token: devnet.plainToken })).args);
  });

  it("fails in Permit2's transfer when the permit fails and there is no approval", async () => {
    const { args } = await withPermit(payer(2), { permitSigner: payer(4) });
    expect(await revertOf(simulateWithPermit(args))).toEqual({
      name: "TRANSFER_FROM_FAILED",
      args: [],
    });
  });
});

/** `wallet` (a contract) approves Permit2 on `token`, sent as the wallet through impersonation. */
async function approveAsContract(wallet: Address, token: Address) {
  const chain = devnetChain(devnet.rpcUrl, devnet.chainId);
  const transport = http(devnet.rpcUrl, { retryCount: 0 });
  const testClient = createTestClient({ chain, transport, mode: "anvil" });
  await testClient.impersonateAccount({ address: wallet });
  await testClient.setBalance({ address: wallet, value: parseEther("1") });
  const hash = await createWalletClient({ chain, transport }).writeContract({
    account: wallet,
    address: token,
    abi: erc20Abi,
    functionName: "approve",
    args: [devnet.permit2, maxUint256],
  });
  await clientsOf(devnet).publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
  await testClient.stopImpersonatingAccount({ address: wallet });
}
