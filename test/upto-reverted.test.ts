/**
 * An `upto` settlement mined and reverted answers the reference's reason for it,
 * `invalid_upto_evm_transaction_failed` (issue 26, item 4; before: exact's
 * `invalid_exact_evm_transaction_failed`). A front-runner between us and the node (an RPC proxy)
 * moves the payer's tokens away just before our settlement reaches the chain, so it passes every
 * check and simulation and reverts when mined. On a real anvil devnet with the upto proxy.
 */
import {
  createWalletClient,
  decodeFunctionData,
  erc20Abi,
  type Hex,
  http,
  parseTransaction,
  type TransactionSerialized,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, expect, test } from "vitest";
import { x402UptoPermit2ProxyAbi } from "../src/evm/devnet/artifacts.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  startDevnet,
} from "../src/evm/devnet/index.js";
import { UPTO_PERMIT2_PROXY_ADDRESS } from "../src/evm/upto/encoding.js";
import { handleSettle } from "../src/protocol/respond.js";
import { chainOf } from "./helpers/chain.js";
import { facilitatorOn } from "./helpers/facilitator.js";
import { type RpcProxy, startRpcProxy } from "./helpers/rpc-proxy.js";
import { officialUptoPayload, uptoOffer } from "./helpers/upto.js";

let devnet: Devnet;
let proxy: RpcProxy;

beforeAll(async () => {
  devnet = await startDevnet();
  proxy = await startRpcProxy(devnet.rpcUrl);
}, 60_000);

afterAll(async () => {
  await proxy?.close();
  await devnet?.stop();
});

test("reverted when mined: the reference's upto reason, the transaction named", async () => {
  const payer = devnet.payers[2] as DevAccount;
  await approvePermit2(devnet, payer, devnet.permitToken.address);
  const requirements = uptoOffer(devnet, 5000n);
  const payload = await officialUptoPayload(devnet, payer as DevAccount, requirements);

  // Just before our settlement reaches the node, the payer sends all its tokens elsewhere.
  proxy.intercept = (method, params) => {
    if (method !== "eth_sendRawTransaction" && method !== "eth_sendRawTransactionSync") {
      return undefined;
    }
    const tx = parseTransaction((params as Hex[])[0] as TransactionSerialized);
    if (tx.to?.toLowerCase() !== UPTO_PERMIT2_PROXY_ADDRESS.toLowerCase() || !tx.data) {
      return undefined;
    }
    decodeFunctionData({ abi: x402UptoPermit2ProxyAbi, data: tx.data });
    return {
      before: async () => {
        const wallet = createWalletClient({
          account: privateKeyToAccount(payer.privateKey),
          transport: http(devnet.rpcUrl),
        });
        const held = await chainOf(devnet).readContract({
          address: devnet.permitToken.address,
          abi: erc20Abi,
          functionName: "balanceOf",
          args: [payer.address],
        });
        const hash = await wallet.writeContract({
          address: devnet.permitToken.address,
          abi: erc20Abi,
          functionName: "transfer",
          args: [devnet.facilitator.address, held],
          chain: null,
        });
        await chainOf(devnet).waitForTransactionReceipt({ hash, pollingInterval: 20 });
      },
    };
  };
  const facilitator = facilitatorOn(devnet, { rpcUrls: [proxy.url] });
  const reply = await handleSettle(facilitator, {
    x402Version: 2,
    paymentPayload: payload,
    paymentRequirements: { ...requirements, amount: "3000" },
  });
  proxy.intercept = () => undefined;
  expect(reply.body, JSON.stringify(reply.body)).toMatchObject({
    success: false,
    errorReason: "invalid_upto_evm_transaction_failed",
  });
  const receipt = await chainOf(devnet).getTransactionReceipt({
    hash: reply.body.transaction as Hex,
  });
  expect(receipt.status).toBe("reverted");
}, 60_000);
