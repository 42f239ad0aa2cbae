/**
 * batch-settlement payloads as the official client (@x402/evm 2.27) and a seller's channel
 * manager make them: the route's requirements, a payer's first payment (a deposit carrying the
 * first voucher) and the vouchers after it, and the claim and settle actions.
 */
import { x402Client } from "@x402/core/client";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme as BatchClient,
  computeChannelId,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { DevAccount, Devnet } from "../src/evm/devnet/index.js";
import { reader } from "./batch-chain-reads.js";
import type { Json } from "./batch-x402-http.js";

/** What one paid request costs on the batch-settlement route: 0.001 test USDC. */
export const PRICE = 1_000n;
export const WITHDRAW_DELAY = 900;

/** How a deposit moves the payer's tokens: the EIP-3009 collector or the Permit2 one. */
export type Method = "eip3009" | "permit2";

export function batchRequirements(chain: Devnet, receiverAuthorizer: Address): Json {
  return {
    scheme: "batch-settlement",
    network: chain.network,
    amount: PRICE.toString(),
    asset: chain.token.address,
    payTo: chain.payee.address,
    maxTimeoutSeconds: 300,
    extra: {
      receiverAuthorizer,
      withdrawDelay: WITHDRAW_DELAY,
      name: chain.token.name,
      version: chain.token.version,
    },
  };
}

export function requirementsFor(chain: Devnet, authorizer: DevAccount, method: Method): Json {
  const accepted = batchRequirements(chain, authorizer.address);
  if (method === "permit2") accepted.extra.assetTransferMethod = "permit2";
  return accepted;
}

/** One payer's channel to the payee, as the official client opens and pays it. */
export interface Channel {
  readonly payer: DevAccount;
  readonly id: Hex;
  readonly config: Json;
  /** The latest voucher signed, and its cumulative amount. */
  latest: { readonly amount: bigint; readonly signature: Hex };
  sign(amount: bigint): Promise<Json>;
}

/**
 * The official client's first payment on an empty channel: a deposit of `deposit` (its
 * depositStrategy) carrying the first voucher (PRICE). A fresh client, reading the chain.
 */
export async function openPayment(
  chain: Devnet,
  payer: DevAccount,
  accepted: Json,
  deposit: bigint,
): Promise<{ payment: Json; channel: Channel }> {
  const signer = toClientEvmSigner(privateKeyToAccount(payer.privateKey), reader(chain) as never);
  const scheme = new BatchClient(signer, { depositStrategy: () => deposit });
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(chain.network, scheme);
  const payment = (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [accepted],
  } as never)) as Json;
  if (payment.payload?.type !== "deposit") {
    throw new Error(`the official client made a ${payment.payload?.type}, not a deposit`);
  }
  const config = scheme.buildChannelConfig(accepted);
  const id = computeChannelId(config, chain.network) as Hex;
  const channel: Channel = {
    payer,
    id,
    config,
    latest: {
      amount: BigInt(payment.payload.voucher.maxClaimableAmount),
      signature: payment.payload.voucher.signature,
    },
    async sign(amount: bigint) {
      const voucher = await signVoucher(signer, id, amount.toString(), chain.network);
      channel.latest = { amount, signature: voucher.signature as Hex };
      return {
        x402Version: 2,
        resource: { url: "http://localhost/metered" },
        accepted,
        payload: { type: "voucher", channelConfig: config, voucher },
      };
    },
  };
  return { payment, channel };
}

/** A claim or settle as a seller's channel manager sends it. */
export function actionPayment(accepted: Json, payload: Record<string, unknown>): Json {
  return {
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepted: { ...accepted, amount: "0", extra: {} },
    payload,
  };
}

/** The claim row of a channel's latest voucher, claiming all of it. */
export const claimRow = (channel: Channel) => ({
  voucher: { channel: channel.config, maxClaimableAmount: channel.latest.amount.toString() },
  signature: channel.latest.signature,
  totalClaimed: channel.latest.amount.toString(),
});
