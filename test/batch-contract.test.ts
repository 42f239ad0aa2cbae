/**
 * Our x402 `batch-settlement` contracts (src/evm/devnet/contracts/X402BatchSettlement.sol and its
 * two deposit collectors) answer the official SDK as the canonical ones: the reference
 * facilitator (x402 2.27, `@x402/evm/batch-settlement/facilitator`) verifies and settles, on the
 * devnet, deposits and vouchers made by the official client, and the claim, settle and refund
 * payloads a receiver's channel manager sends. Every balance is checked to the unit.
 *
 * PRINT_BATCH_GAS=1 prints the gas each kind of transaction used.
 */
import { x402Client } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme as BatchClient,
  computeChannelId,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as BatchFacilitator } from "@x402/evm/batch-settlement/facilitator";
import {
  type Address,
  createTestClient,
  erc20Abi,
  type Hex,
  hashTypedData,
  hexToBytes,
  http,
  recoverAddress,
  toFunctionSelector,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { x402BatchSettlementAbi } from "../src/evm/devnet/artifacts.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  devAccounts,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { clientsOf } from "./helpers/permit2.js";
import { referenceSigner } from "./helpers/x402.js";

/** What one paid request costs; the client deposits 5 times this (its default policy). */
const PRICE = 1_000n;
const DEPOSIT = 5n * PRICE;
const WITHDRAW_DELAY = 900;

let devnet: Devnet;
let facilitator: x402Facilitator;
/** Holds the receiver-authorizer key; the facilitator signs claims and refunds with it. */
let authorizer: DevAccount;
/** Gas used per kind of transaction: in all, and without the intrinsic cost (base + calldata). */
const gas: Record<string, { total: bigint; execution: bigint }> = {};

beforeAll(async () => {
  devnet = await startDevnet();
  authorizer = devAccounts[7] as DevAccount;
  facilitator = new x402Facilitator();
  facilitator.register(
    devnet.network,
    new BatchFacilitator(
      referenceSigner(devnet, devnet.facilitator),
      privateKeyToAccount(authorizer.privateKey),
    ),
  );
});
afterAll(async () => {
  if (process.env.PRINT_BATCH_GAS) console.log("batch-settlement gas used:", gas);
  await devnet?.stop();
});

type Method = "eip3009" | "permit2";

function requirements(method: Method = "eip3009") {
  return {
    scheme: "batch-settlement",
    network: devnet.network,
    amount: PRICE.toString(),
    asset: devnet.token.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: {
      receiverAuthorizer: privateKeyToAccount(authorizer.privateKey).address,
      withdrawDelay: WITHDRAW_DELAY,
      name: devnet.token.name,
      version: devnet.token.version,
      ...(method === "permit2" ? { assetTransferMethod: "permit2" } : {}),
    },
  };
}
type Requirements = ReturnType<typeof requirements>;

function clientSigner(payer: DevAccount) {
  return toClientEvmSigner(
    privateKeyToAccount(payer.privateKey),
    clientsOf(devnet).publicClient as never,
  );
}

/**
 * What the official client sends for one request: a deposit with a voucher when the channel is
 * empty, a voucher alone when it is funded. A fresh client each time, reading the channel from
 * the chain (as after a restart).
 */
async function pay(payer: DevAccount, method: Method = "eip3009") {
  const accepted = requirements(method);
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(devnet.network, new BatchClient(clientSigner(payer)));
  const payload = await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [accepted],
    // biome-ignore lint/suspicious/noExplicitAny: the client's types are version unions.
  } as any);
  return payload as unknown as { accepted: Requirements; payload: Record<string, unknown> };
}

function channelConfigOf(payer: DevAccount) {
  return new BatchClient(clientSigner(payer)).buildChannelConfig(requirements() as never);
}

function channelIdOf(payer: DevAccount): Hex {
  return computeChannelId(channelConfigOf(payer), devnet.network);
}

/** A payer-signed voucher row for a claim, as a receiver's channel manager stores it. */
async function claimRow(payer: DevAccount, maxClaimable: bigint, totalClaimed = maxClaimable) {
  const voucher = await signVoucher(
    clientSigner(payer),
    channelIdOf(payer),
    maxClaimable.toString(),
    devnet.network,
  );
  return {
    voucher: { channel: channelConfigOf(payer), maxClaimableAmount: maxClaimable.toString() },
    signature: voucher.signature,
    totalClaimed: totalClaimed.toString(),
  };
}

/** A settle-action payload (claim, settle, refund) as the server's channel manager sends it. */
function action(payload: Record<string, unknown>) {
  const accepted = { ...requirements(), amount: "0", extra: {} };
  return { x402Version: 2, accepted, payload };
}

const read = () => clientsOf(devnet).publicClient;

async function usdc(who: Address): Promise<bigint> {
  return read().readContract({
    address: devnet.token.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });
}

async function channel(payer: DevAccount): Promise<{ balance: bigint; totalClaimed: bigint }> {
  const [balance, totalClaimed] = await read().readContract({
    address: devnet.batchSettlement.settlement,
    abi: x402BatchSettlementAbi,
    functionName: "channels",
    args: [channelIdOf(payer)],
  });
  return { balance, totalClaimed };
}

async function receiverTotals(): Promise<{ claimed: bigint; settled: bigint }> {
  const [claimed, settled] = await read().readContract({
    address: devnet.batchSettlement.settlement,
    abi: x402BatchSettlementAbi,
    functionName: "receivers",
    args: [devnet.payee.address, devnet.token.address],
  });
  return { claimed, settled };
}

async function gasOf(label: string, transaction: string): Promise<void> {
  const receipt = await read().getTransactionReceipt({ hash: transaction as Hex });
  expect(receipt.status).toBe("success");
  expect(receipt.to?.toLowerCase()).toBe(devnet.batchSettlement.settlement.toLowerCase());
  const { input } = await read().getTransaction({ hash: transaction as Hex });
  const calldata = hexToBytes(input).reduce((sum, byte) => sum + (byte === 0 ? 4n : 16n), 0n);
  gas[label] = { total: receipt.gasUsed, execution: receipt.gasUsed - 21_000n - calldata };
}

// Four channels, one per payer, from payer to the payee: two funded by EIP-3009, one by Permit2,
// one more by EIP-3009 for the multi-channel claim.
let payerA: DevAccount;
let payerB: DevAccount;
let payerC: DevAccount;
let payerD: DevAccount;

describe("deposits through both collectors", () => {
  test("EIP-3009: the official client's deposit verifies and settles; the money moves into the channel", async () => {
    [payerA, payerB, payerC, payerD] = devnet.payers as [
      DevAccount,
      DevAccount,
      DevAccount,
      DevAccount,
    ];
    const payment = await pay(payerA);
    expect(payment.payload.type).toBe("deposit");
    const payerBefore = await usdc(payerA.address);
    const escrowBefore = await usdc(devnet.batchSettlement.settlement);

    const verified = await facilitator.verify(payment as never, payment.accepted as never);
    expect(verified).toMatchObject({
      isValid: true,
      payer: payerA.address,
      extra: { channelId: channelIdOf(payerA), balance: "0", totalClaimed: "0", refundNonce: "0" },
    });
    const settled = await facilitator.settle(payment as never, payment.accepted as never);
    expect(settled).toMatchObject({
      success: true,
      payer: payerA.address,
      amount: DEPOSIT.toString(),
      extra: { channelState: { balance: DEPOSIT.toString(), totalClaimed: "0" } },
    });
    await gasOf("deposit (EIP-3009 collector, new channel)", settled.transaction);

    expect(await channel(payerA)).toEqual({ balance: DEPOSIT, totalClaimed: 0n });
    expect(await usdc(payerA.address)).toBe(payerBefore - DEPOSIT);
    expect(await usdc(devnet.batchSettlement.settlement)).toBe(escrowBefore + DEPOSIT);
    expect(await usdc(devnet.batchSettlement.erc3009Collector)).toBe(0n);

    // The same authorization again: the token refuses the used nonce, so the simulation fails.
    const again = await facilitator.settle(payment as never, payment.accepted as never);
    expect(again.success).toBe(false);
  });

  test("Permit2: after the payer approves Permit2, the deposit verifies and settles", async () => {
    const payment0 = await pay(payerB, "permit2");
    expect(await facilitator.verify(payment0 as never, payment0.accepted as never)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_batch_settlement_evm_permit2_allowance_required",
    });

    await approvePermit2(devnet, payerB, devnet.token.address);
    const payment = await pay(payerB, "permit2");
    const auth = (payment.payload.deposit as { authorization: Record<string, unknown> })
      .authorization;
    expect(auth.permit2Authorization).toMatchObject({
      spender: devnet.batchSettlement.permit2Collector,
    });
    const payerBefore = await usdc(payerB.address);
    const escrowBefore = await usdc(devnet.batchSettlement.settlement);
    expect(await facilitator.verify(payment as never, payment.accepted as never)).toMatchObject({
      isValid: true,
      payer: payerB.address,
    });
    const settled = await facilitator.settle(payment as never, payment.accepted as never);
    expect(settled).toMatchObject({ success: true, amount: DEPOSIT.toString() });
    await gasOf("deposit (Permit2 collector, new channel)", settled.transaction);

    expect(await channel(payerB)).toEqual({ balance: DEPOSIT, totalClaimed: 0n });
    expect(await usdc(payerB.address)).toBe(payerBefore - DEPOSIT);
    expect(await usdc(devnet.batchSettlement.settlement)).toBe(escrowBefore + DEPOSIT);
  });

  test("two more EIP-3009 channels", async () => {
    for (const payer of [payerC, payerD]) {
      const payment = await pay(payer);
      const settled = await facilitator.settle(payment as never, payment.accepted as never);
      expect(settled.success).toBe(true);
      expect(await channel(payer)).toEqual({ balance: DEPOSIT, totalClaimed: 0n });
    }
  });
});

describe("vouchers (verify only)", () => {
  test("the official client's next payment on a funded channel is a voucher, and valid", async () => {
    const payment = await pay(payerA);
    expect(payment.payload.type).toBe("voucher");
    expect(payment.payload.voucher).toMatchObject({ maxClaimableAmount: PRICE.toString() });
    expect(await facilitator.verify(payment as never, payment.accepted as never)).toMatchObject({
      isValid: true,
      payer: payerA.address,
      extra: { balance: DEPOSIT.toString(), totalClaimed: "0" },
    });
  });

  test("a cumulative amount over the channel's balance: cumulative_exceeds_balance", async () => {
    const payment = await pay(payerA);
    const voucher = await signVoucher(
      clientSigner(payerA),
      channelIdOf(payerA),
      (DEPOSIT + 1n).toString(),
      devnet.network,
    );
    const over = { ...payment, payload: { ...payment.payload, voucher } };
    expect(await facilitator.verify(over as never, payment.accepted as never)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_batch_settlement_evm_cumulative_exceeds_balance",
    });
  });

  test("a voucher signed by another key: voucher_signature", async () => {
    const payment = await pay(payerA);
    const forged = await signVoucher(
      clientSigner(payerB),
      channelIdOf(payerA),
      PRICE.toString(),
      devnet.network,
    );
    const bad = { ...payment, payload: { ...payment.payload, voucher: forged } };
    expect(await facilitator.verify(bad as never, payment.accepted as never)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_batch_settlement_evm_voucher_signature",
    });
  });
});

describe("claims, settle, refunds", () => {
  test("a claim of one channel, signed by the facilitator's receiver authorizer, lands", async () => {
    const settled = await facilitator.settle(
      action({ type: "claim", claims: [await claimRow(payerA, 3n * PRICE)] }) as never,
      requirements() as never,
    );
    expect(settled).toMatchObject({ success: true });
    await gasOf("claimWithSignature (1 channel)", settled.transaction);
    expect(await channel(payerA)).toEqual({ balance: DEPOSIT, totalClaimed: 3n * PRICE });
    expect(await receiverTotals()).toEqual({ claimed: 3n * PRICE, settled: 0n });

    // The voucher now below the claimed total: the official verify says so.
    const stale = await pay(payerA);
    const voucher = await signVoucher(
      clientSigner(payerA),
      channelIdOf(payerA),
      (2n * PRICE).toString(),
      devnet.network,
    );
    const below = { ...stale, payload: { ...stale.payload, voucher } };
    expect(await facilitator.verify(below as never, stale.accepted as never)).toMatchObject({
      isValid: false,
      invalidReason: "invalid_batch_settlement_evm_cumulative_below_claimed",
    });
  });

  test("a claim above the voucher's ceiling fails in simulation, and nothing moves", async () => {
    const row = { ...(await claimRow(payerB, PRICE)), totalClaimed: (2n * PRICE).toString() };
    const settled = await facilitator.settle(
      action({ type: "claim", claims: [row] }) as never,
      requirements() as never,
    );
    expect(settled).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_claim_simulation_failed",
    });
    // The SDK's ABI has no errors: the message carries our error's selector.
    expect(settled.errorMessage).toContain(toFunctionSelector("ClaimExceedsCeiling()"));
    expect(await channel(payerB)).toEqual({ balance: DEPOSIT, totalClaimed: 0n });
  });

  test("a claim of four channels in one transaction", async () => {
    const claims = [
      await claimRow(payerA, 4n * PRICE),
      await claimRow(payerB, 2n * PRICE),
      await claimRow(payerC, PRICE),
      await claimRow(payerD, DEPOSIT),
    ];
    const settled = await facilitator.settle(
      action({ type: "claim", claims }) as never,
      requirements() as never,
    );
    expect(settled).toMatchObject({ success: true });
    await gasOf("claimWithSignature (4 channels)", settled.transaction);
    expect(await channel(payerA)).toEqual({ balance: DEPOSIT, totalClaimed: 4n * PRICE });
    expect(await channel(payerB)).toEqual({ balance: DEPOSIT, totalClaimed: 2n * PRICE });
    expect(await channel(payerC)).toEqual({ balance: DEPOSIT, totalClaimed: PRICE });
    expect(await channel(payerD)).toEqual({ balance: DEPOSIT, totalClaimed: DEPOSIT });
    expect(await receiverTotals()).toEqual({ claimed: 12n * PRICE, settled: 0n });
  });

  test("settle pays the receiver everything claimed, in one transfer", async () => {
    const payeeBefore = await usdc(devnet.payee.address);
    const escrowBefore = await usdc(devnet.batchSettlement.settlement);
    const settled = await facilitator.settle(
      action({
        type: "settle",
        receiver: devnet.payee.address,
        token: devnet.token.address,
      }) as never,
      requirements() as never,
    );
    expect(settled).toMatchObject({ success: true, amount: (12n * PRICE).toString() });
    await gasOf("settle (sweep one receiver and token)", settled.transaction);
    expect(await usdc(devnet.payee.address)).toBe(payeeBefore + 12n * PRICE);
    expect(await usdc(devnet.batchSettlement.settlement)).toBe(escrowBefore - 12n * PRICE);
    expect(await receiverTotals()).toEqual({ claimed: 12n * PRICE, settled: 12n * PRICE });
  });

  test("settle with nothing left to settle: nothing_to_settle", async () => {
    const settled = await facilitator.settle(
      action({
        type: "settle",
        receiver: devnet.payee.address,
        token: devnet.token.address,
      }) as never,
      requirements() as never,
    );
    expect(settled).toMatchObject({
      success: false,
      errorReason: "invalid_batch_settlement_evm_nothing_to_settle",
    });
  });

  test("a cooperative refund returns the unclaimed rest to the payer", async () => {
    const payerBefore = await usdc(payerA.address);
    const rest = DEPOSIT - 4n * PRICE;
    const voucher = await signVoucher(
      clientSigner(payerA),
      channelIdOf(payerA),
      (4n * PRICE).toString(),
      devnet.network,
    );
    const settled = await facilitator.settle(
      action({
        type: "refund",
        channelConfig: channelConfigOf(payerA),
        voucher,
        amount: rest.toString(),
        refundNonce: "0",
        claims: [],
      }) as never,
      requirements() as never,
    );
    expect(settled).toMatchObject({
      success: true,
      payer: payerA.address,
      amount: rest.toString(),
      extra: { channelState: { balance: (4n * PRICE).toString(), refundNonce: "1" } },
    });
    await gasOf("refundWithSignature", settled.transaction);
    expect(await usdc(payerA.address)).toBe(payerBefore + rest);
    expect(await channel(payerA)).toEqual({ balance: 4n * PRICE, totalClaimed: 4n * PRICE });
    const nonce = await read().readContract({
      address: devnet.batchSettlement.settlement,
      abi: x402BatchSettlementAbi,
      functionName: "refundNonce",
      args: [channelIdOf(payerA)],
    });
    expect(nonce).toBe(1n);
  });

  test("a refund with a last claim (multicall): the receiver's share is claimed, the rest refunded", async () => {
    const payerBefore = await usdc(payerB.address);
    const claimed = 3n * PRICE;
    const row = await claimRow(payerB, claimed);
    const settled = await facilitator.settle(
      action({
        type: "refund",
        channelConfig: channelConfigOf(payerB),
        voucher: {
          channelId: channelIdOf(payerB),
          maxClaimableAmount: row.totalClaimed,
          signature: row.signature,
        },
        amount: DEPOSIT.toString(),
        refundNonce: "0",
        claims: [row],
      }) as never,
      requirements() as never,
    );
    expect(settled).toMatchObject({ success: true, amount: (DEPOSIT - claimed).toString() });
    await gasOf("multicall(claimWithSignature + refundWithSignature)", settled.transaction);
    expect(await usdc(payerB.address)).toBe(payerBefore + DEPOSIT - claimed);
    expect(await channel(payerB)).toEqual({ balance: claimed, totalClaimed: claimed });

    // The receiver's newly claimed PRICE is swept by the next settle.
    const payeeBefore = await usdc(devnet.payee.address);
    const swept = await facilitator.settle(
      action({
        type: "settle",
        receiver: devnet.payee.address,
        token: devnet.token.address,
      }) as never,
      requirements() as never,
    );
    expect(swept).toMatchObject({ success: true, amount: PRICE.toString() });
    expect(await usdc(devnet.payee.address)).toBe(payeeBefore + PRICE);
  });

  test("the escrow holds exactly what the channels still owe", async () => {
    // A: 4 claimed, all swept; B: 3 claimed, all swept; C: 5 deposited, 1 claimed and swept;
    // D: 5 claimed and swept. Owed: C's unclaimed 4.
    expect(await usdc(devnet.batchSettlement.settlement)).toBe(4n * PRICE);
  });
});

describe("views and the payer's own exit", () => {
  test("ids and digests are the SDK's (channel id, voucher, refund, claim batch, domain)", async () => {
    const contract = { address: devnet.batchSettlement.settlement, abi: x402BatchSettlementAbi };
    const config = channelConfigOf(payerC);
    const channelId = computeChannelId(config, devnet.network);
    const domain = {
      name: "x402 Batch Settlement",
      version: "1",
      chainId: devnet.chainId,
      verifyingContract: devnet.batchSettlement.settlement,
    };
    expect(
      await read().readContract({ ...contract, functionName: "getChannelId", args: [config] }),
    ).toBe(channelId);
    expect(
      await read().readContract({
        ...contract,
        functionName: "getVoucherDigest",
        args: [channelId, 7n],
      }),
    ).toBe(
      hashTypedData({
        domain,
        types: {
          Voucher: [
            { name: "channelId", type: "bytes32" },
            { name: "maxClaimableAmount", type: "uint128" },
          ],
        },
        primaryType: "Voucher",
        message: { channelId, maxClaimableAmount: 7n },
      }),
    );
    expect(
      await read().readContract({
        ...contract,
        functionName: "getRefundDigest",
        args: [channelId, 3n, 9n],
      }),
    ).toBe(
      hashTypedData({
        domain,
        types: {
          Refund: [
            { name: "channelId", type: "bytes32" },
            { name: "nonce", type: "uint256" },
            { name: "amount", type: "uint128" },
          ],
        },
        primaryType: "Refund",
        message: { channelId, nonce: 3n, amount: 9n },
      }),
    );
    const rows = [await claimRow(payerC, 2n * PRICE), await claimRow(payerD, DEPOSIT)];
    const onChain = await read().readContract({
      ...contract,
      functionName: "getClaimBatchDigest",
      args: [
        rows.map((r) => ({
          voucher: {
            channel: r.voucher.channel,
            maxClaimableAmount: BigInt(r.voucher.maxClaimableAmount),
          },
          signature: r.signature,
          totalClaimed: BigInt(r.totalClaimed),
        })),
      ],
    });
    const authorizerAccount = privateKeyToAccount(authorizer.privateKey);
    const signed = await authorizerAccount.signTypedData({
      domain,
      types: {
        ClaimBatch: [{ name: "claims", type: "ClaimEntry[]" }],
        ClaimEntry: [
          { name: "channelId", type: "bytes32" },
          { name: "maxClaimableAmount", type: "uint128" },
          { name: "totalClaimed", type: "uint128" },
        ],
      },
      primaryType: "ClaimBatch",
      message: {
        claims: rows.map((r) => ({
          channelId: computeChannelId(r.voucher.channel, devnet.network),
          maxClaimableAmount: BigInt(r.voucher.maxClaimableAmount),
          totalClaimed: BigInt(r.totalClaimed),
        })),
      },
    });
    expect(await recoverAddress({ hash: onChain, signature: signed })).toBe(
      authorizerAccount.address,
    );
    const [, name, version, chainId, verifyingContract] = await read().readContract({
      ...contract,
      functionName: "eip712Domain",
    });
    expect({ name, version, chainId, verifyingContract }).toEqual({
      ...domain,
      chainId: BigInt(devnet.chainId),
    });
  });

  test("a timed withdrawal: refused before the delay, pays the unclaimed rest after it", async () => {
    const contract = { address: devnet.batchSettlement.settlement, abi: x402BatchSettlementAbi };
    const config = channelConfigOf(payerC);
    const { publicClient, wallet } = clientsOf(devnet, payerC);
    const rest = DEPOSIT - PRICE;
    await expect(
      publicClient.simulateContract({
        ...contract,
        functionName: "initiateWithdraw",
        args: [config, rest + 1n],
        account: wallet.account,
      }),
    ).rejects.toThrow("WithdrawAmountExceedsAvailable");
    const started = await wallet.writeContract({
      ...contract,
      functionName: "initiateWithdraw",
      args: [config, rest],
    });
    expect((await publicClient.waitForTransactionReceipt({ hash: started })).status).toBe(
      "success",
    );
    const finalize = {
      ...contract,
      functionName: "finalizeWithdraw",
      args: [config],
      account: wallet.account,
    } as const;
    await expect(publicClient.simulateContract(finalize)).rejects.toThrow(
      "WithdrawDelayNotElapsed",
    );

    const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
    await anvil.increaseTime({ seconds: WITHDRAW_DELAY });
    await anvil.mine({ blocks: 1 });
    const payerBefore = await usdc(payerC.address);
    const done = await wallet.writeContract(finalize);
    expect((await publicClient.waitForTransactionReceipt({ hash: done })).status).toBe("success");
    expect(await usdc(payerC.address)).toBe(payerBefore + rest);
    expect(await channel(payerC)).toEqual({ balance: PRICE, totalClaimed: PRICE });
    expect(await usdc(devnet.batchSettlement.settlement)).toBe(0n);
    const [amount, initiatedAt] = await read().readContract({
      ...contract,
      functionName: "pendingWithdrawals",
      args: [channelIdOf(payerC)],
    });
    expect({ amount, initiatedAt }).toEqual({ amount: 0n, initiatedAt: 0 });
  });
});
