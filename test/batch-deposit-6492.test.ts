/**
 * batch-settlement deposits from a wallet not deployed yet (ERC-6492; issue 26, item 2). The
 * channel's payer is a counterfactual TestSmartWallet of the devnet's factory; its owner signs the
 * deposit's ReceiveWithAuthorization (wrapped in ERC-6492) and, as the channel's payer authorizer,
 * its vouchers. Before: refused (`eip6492_factory_not_allowed`, whatever the factory). Now, as the
 * official facilitator: refused while the factory is not allowed (same reason); allowed, the
 * wallet is deployed in the deposit's own transaction (one transaction, through Multicall3) and
 * the channel funded; a factory call that cannot succeed is `smart_wallet_deployment_failed`.
 */
import { x402Facilitator } from "@x402/core/facilitator";
import { BatchSettlementEvmScheme as BatchFacilitator } from "@x402/evm/batch-settlement/facilitator";
import { type Hex, serializeErc6492Signature } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import { channelIdOf } from "../src/evm/batch-settlement/channel.js";
import {
  ERC3009_COLLECTOR_ADDRESS,
  RECEIVE_AUTHORIZATION_TYPES,
  SETTLEMENT_ABI,
  SETTLEMENT_ADDRESS,
  settlementDomain,
  VOUCHER_TYPES,
} from "../src/evm/batch-settlement/constants.js";
import { erc3009DepositNonce } from "../src/evm/batch-settlement/deposit-checks.js";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import {
  counterfactualWallet,
  type DevAccount,
  type Devnet,
  devAccounts,
  erc6492Signature,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { batchRequirements, x402Request } from "./helpers/batch.js";
import { chainOf } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { send } from "./helpers/permit2.js";
import { referenceSigner } from "./helpers/x402.js";

// biome-ignore lint/suspicious/noExplicitAny: wire objects are plain JSON here.
type Json = any;

const AUTHORIZER = devAccounts[7] as DevAccount;
const DEPOSIT = 5_000n;

let devnet: Devnet;
let owner: DevAccount;

beforeAll(async () => {
  devnet = await startDevnet();
  owner = devnet.payers[0] as DevAccount;
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
});

const offer = () =>
  batchRequirements(devnet, {
    payTo: devnet.payee.address,
    receiverAuthorizer: AUTHORIZER.address,
    price: 1_000n,
  });

/** A deposit into a channel of a fresh counterfactual wallet of `owner` (funded with USDC). */
async function counterfactualDeposit(salt: bigint, factoryData?: Hex) {
  const wallet = counterfactualWallet(devnet, owner.address, salt);
  await send(devnet, devnet.payee, {
    address: devnet.token.address,
    abi: testUsdcAbi,
    functionName: "mint",
    args: [wallet.address, 1_000_000n],
  });
  const accepted = offer();
  const channelConfig = {
    payer: wallet.address,
    payerAuthorizer: owner.address,
    receiver: devnet.payee.address,
    receiverAuthorizer: AUTHORIZER.address,
    token: devnet.token.address,
    withdrawDelay: 900,
    salt: `0x${"0".repeat(64)}` as Hex,
  };
  const channelId = channelIdOf(channelConfig, devnet.chainId);
  const account = privateKeyToAccount(owner.privateKey);
  const depositSalt = `0x${salt.toString(16).padStart(64, "0")}` as Hex;
  const validBefore = BigInt(Math.floor(Date.now() / 1000) + 300);
  const inner = await account.signTypedData({
    domain: {
      name: devnet.token.name,
      version: devnet.token.version,
      chainId: devnet.chainId,
      verifyingContract: devnet.token.address,
    },
    types: RECEIVE_AUTHORIZATION_TYPES,
    primaryType: "ReceiveWithAuthorization",
    message: {
      from: wallet.address,
      to: ERC3009_COLLECTOR_ADDRESS,
      value: DEPOSIT,
      validAfter: 0n,
      validBefore,
      nonce: erc3009DepositNonce(channelId, depositSalt),
    },
  });
  const signature = factoryData
    ? serializeErc6492Signature({ address: wallet.factory, data: factoryData, signature: inner })
    : erc6492Signature(wallet, inner);
  const voucher = await account.signTypedData({
    domain: settlementDomain(devnet.chainId),
    types: VOUCHER_TYPES,
    primaryType: "Voucher",
    message: { channelId, maxClaimableAmount: 1_000n },
  });
  const payload = {
    type: "deposit",
    channelConfig,
    voucher: { channelId, maxClaimableAmount: "1000", signature: voucher },
    deposit: {
      amount: DEPOSIT.toString(),
      authorization: {
        erc3009Authorization: {
          validAfter: "0",
          validBefore: validBefore.toString(),
          salt: depositSalt,
          signature,
        },
      },
    },
  };
  return { wallet, channelId, body: x402Request(accepted, payload) as Json, accepted };
}

function official(allowed: string[]) {
  const facilitator = new x402Facilitator();
  facilitator.register(
    devnet.network,
    new BatchFacilitator(
      referenceSigner(devnet, devAccounts[6] as DevAccount),
      privateKeyToAccount(AUTHORIZER.privateKey),
      { eip6492AllowedFactories: allowed },
    ),
  );
  return facilitator;
}

const codeOf = async (address: Hex) => (await chainOf(devnet).getCode({ address })) ?? "0x";

test("factory not allowed: refused by both with the official reason, nothing deployed", async () => {
  const { wallet, body, accepted } = await counterfactualDeposit(1n);
  const theirs = await official([]).verify(body.paymentPayload, accepted as never);
  expect(theirs.invalidReason).toBe("invalid_batch_settlement_evm_eip6492_factory_not_allowed");
  const ours = facilitatorOn(devnet, {
    receiverAuthorizer: privateKeyToAccount(AUTHORIZER.privateKey),
  });
  const verdict = await handleVerify(ours, body);
  expect(verdict.body).toMatchObject({ isValid: false, invalidReason: theirs.invalidReason });
  expect(await codeOf(wallet.address)).toBe("0x");
}, 60_000);

test("factory allowed: valid for both; one transaction deploys the wallet and funds the channel", async () => {
  const { wallet, channelId, body, accepted } = await counterfactualDeposit(2n);
  const theirs = await official([devnet.walletFactory]).verify(
    body.paymentPayload,
    accepted as never,
  );
  expect(theirs, JSON.stringify(theirs)).toMatchObject({ isValid: true });
  const ours = facilitatorOn(devnet, {
    receiverAuthorizer: privateKeyToAccount(AUTHORIZER.privateKey),
    erc6492Factories: [devnet.walletFactory],
  });
  expect((await handleVerify(ours, body)).body).toMatchObject({ isValid: true });
  const settled = await handleSettle(ours, body);
  expect(settled.body, JSON.stringify(settled.body)).toMatchObject({ success: true });
  expect(await codeOf(wallet.address)).not.toBe("0x");
  const [balance] = await chainOf(devnet).readContract({
    address: SETTLEMENT_ADDRESS,
    abi: SETTLEMENT_ABI,
    functionName: "channels",
    args: [channelId],
  });
  expect(balance).toBe(DEPOSIT);
  // Deployed and deposited in the settling transaction itself.
  const receipt = await chainOf(devnet).getTransactionReceipt({
    hash: settled.body.transaction as Hex,
  });
  expect(
    receipt.logs.some((log) => log.address.toLowerCase() === SETTLEMENT_ADDRESS.toLowerCase()),
  ).toBe(true);
}, 60_000);

test("a factory call that cannot deploy the wallet: smart_wallet_deployment_failed, nothing sent", async () => {
  const { body } = await counterfactualDeposit(3n, "0xdeadbeef");
  const ours = facilitatorOn(devnet, {
    receiverAuthorizer: privateKeyToAccount(AUTHORIZER.privateKey),
    erc6492Factories: [devnet.walletFactory],
  });
  const nonce = () =>
    chainOf(devnet).getTransactionCount({
      address: devnet.facilitator.address,
      blockTag: "pending",
    });
  const before = await nonce();
  const settled = await handleSettle(ours, body);
  expect(settled.body, JSON.stringify(settled.body)).toMatchObject({
    success: false,
    errorReason: "invalid_batch_settlement_evm_smart_wallet_deployment_failed",
  });
  expect(await nonce()).toBe(before);
}, 60_000);
