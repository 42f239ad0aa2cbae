/**
 * Undeployed smart wallets (ERC-6492): a payment signed for a wallet that does not exist yet is
 * accepted only when the operator allowed its factory, as the reference does; settling it deploys
 * the wallet and pays in one transaction. On the devnet's TestSmartWalletFactory and TestUSDC.
 */
import { type Address, erc20Abi, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testUsdcAbi } from "../src/evm/devnet/artifacts.js";
import {
  counterfactualWallet,
  type DevAccount,
  type Devnet,
  erc6492Signature,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { handleSettle, handleVerify } from "../src/protocol/respond.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { clientsOf, send } from "./helpers/permit2.js";
import { randomNonce, signAuthorization, wireAuthorization } from "./helpers/sign.js";
import { referenceFacilitator, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let owner: DevAccount;

beforeAll(async () => {
  devnet = await startDevnet();
  owner = devnet.payers[0] as DevAccount;
});
afterAll(async () => {
  await devnet?.stop();
});

const usdcOf = (who: Address) =>
  clientsOf(devnet).publicClient.readContract({
    address: devnet.token.address,
    abi: erc20Abi,
    functionName: "balanceOf",
    args: [who],
  });

/** A payment of 10000 from a fresh undeployed wallet of `owner`, funded with test USDC. */
async function counterfactualPayment(salt: bigint) {
  const wallet = counterfactualWallet(devnet, owner.address, salt);
  await send(devnet, devnet.payee, {
    address: devnet.token.address,
    abi: testUsdcAbi,
    functionName: "mint",
    args: [wallet.address, 1_000_000n],
  });
  const fields = {
    from: wallet.address,
    to: devnet.payee.address,
    value: 10_000n,
    validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.now() / 1000) + 300),
    nonce: randomNonce(),
  };
  const inner = await signAuthorization(devnet, owner.privateKey, fields);
  const requirements = requirementsV2(devnet);
  const payload = {
    x402Version: 2,
    resource: { url: "http://localhost/paid" },
    accepted: requirements,
    payload: {
      authorization: wireAuthorization(fields),
      signature: erc6492Signature(wallet, inner),
    },
  };
  return { wallet, pair: { payload, requirements } };
}

describe("a counterfactual wallet's EIP-3009 payment", () => {
  test("refused without an allowed factory, by us and by the reference alike", async () => {
    const { pair } = await counterfactualPayment(1n);
    const reference = referenceFacilitator(devnet, devnet.payee);
    expect(await reference.verify(pair.payload as never, pair.requirements as never)).toMatchObject(
      {
        isValid: false,
        invalidReason: "eip6492_factory_not_allowed",
      },
    );
    const mine = await handleVerify(facilitatorOn(devnet), pair);
    expect(mine.body).toMatchObject({ success: false, error: "unsupported_signature" });
    expect(String(mine.body.message)).toContain(devnet.walletFactory);
  });

  test("with its factory allowed: verified, then deployed and paid in one transaction, once", async () => {
    const { wallet, pair } = await counterfactualPayment(2n);
    const allowed = { erc6492Factories: [devnet.walletFactory] };
    const reference = referenceFacilitator(devnet, devnet.payee, {
      eip6492AllowedFactories: [devnet.walletFactory],
    });
    expect(await reference.verify(pair.payload as never, pair.requirements as never)).toMatchObject(
      {
        isValid: true,
      },
    );
    const facilitator = facilitatorOn(devnet, allowed);
    expect((await handleVerify(facilitator, pair)).body).toMatchObject({
      success: true,
      payer: wallet.address,
    });

    const { publicClient } = clientsOf(devnet);
    expect(await publicClient.getCode({ address: wallet.address })).toBeUndefined();
    const before = await usdcOf(devnet.payee.address);
    const replies = await Promise.all([1, 2, 3].map(() => handleSettle(facilitator, pair)));
    const wins = replies.filter((r) => r.body.success);
    expect(wins).toHaveLength(1);
    const hash = wins[0]?.body.transactionHash as Hex;
    const receipt = await publicClient.getTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    expect(await publicClient.getCode({ address: wallet.address })).toMatch(/^0x[0-9a-f]+$/);
    expect(await usdcOf(devnet.payee.address)).toBe(before + 10_000n);
    // Deployed now: a replay is the journal's nonce_already_used, not a second payment.
    expect((await handleSettle(facilitator, pair)).body).toMatchObject({
      success: false,
      error: "nonce_already_used",
    });
  });

  test("a wrong owner signature for an allowed factory's wallet is invalid_signature", async () => {
    const { pair } = await counterfactualPayment(3n);
    const other = devnet.payers[1] as DevAccount;
    const authorization = pair.payload.payload.authorization;
    const forged = await signAuthorization(devnet, other.privateKey, {
      ...authorization,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
    });
    const wallet = counterfactualWallet(devnet, owner.address, 3n);
    pair.payload.payload.signature = erc6492Signature(wallet, forged);
    const facilitator = facilitatorOn(devnet, { erc6492Factories: [devnet.walletFactory] });
    expect((await handleVerify(facilitator, pair)).body).toMatchObject({
      success: false,
      error: "invalid_signature",
    });
  });
});
