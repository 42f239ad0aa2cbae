/**
 * The official batch-settlement stack (x402 2.27) as the tests use it on the devnet: requirements
 * as a seller offers them, the official client's payment for them, and an Express seller with its
 * channel manager whose facilitator is the one under test.
 */
import type { Server } from "node:http";
import { x402Client } from "@x402/core/client";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme as BatchClient,
  computeChannelId,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { BatchSettlementEvmScheme as BatchServer } from "@x402/evm/batch-settlement/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { wrapFetchWithPayment, x402Client as x402FetchClient } from "@x402/fetch";
import express from "express";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { DevAccount, Devnet } from "../../src/evm/devnet/index.js";
import { clientsOf } from "./permit2.js";

export interface Token {
  readonly address: Address;
  readonly name: string;
  readonly version: string;
}

export interface BatchOffer {
  readonly payTo: Address;
  readonly receiverAuthorizer: Address;
  readonly price?: bigint | undefined;
  readonly token?: Token | undefined;
  readonly method?: "eip3009" | "permit2" | undefined;
}

/** batch-settlement requirements as the official server scheme makes them (withdraw delay 900 s). */
export function batchRequirements(devnet: Devnet, offer: BatchOffer) {
  const token = offer.token ?? devnet.token;
  return {
    scheme: "batch-settlement",
    network: devnet.network,
    amount: (offer.price ?? 1_000n).toString(),
    asset: token.address,
    payTo: offer.payTo,
    maxTimeoutSeconds: 300,
    extra: {
      receiverAuthorizer: offer.receiverAuthorizer,
      withdrawDelay: 900,
      name: token.name,
      version: token.version,
      ...(offer.method === "permit2" ? { assetTransferMethod: "permit2" } : {}),
    },
  };
}

export type BatchRequirements = ReturnType<typeof batchRequirements>;

/** The official client's signer for `payer`, reading the devnet. */
export const officialSigner = (devnet: Devnet, payer: DevAccount) =>
  toClientEvmSigner(privateKeyToAccount(payer.privateKey), clientsOf(devnet).publicClient as never);

/**
 * The payload the official client sends for one request: a deposit on an empty channel (of
 * `depositMultiplier` requests' worth, 5 by default), else a voucher.
 */
export async function officialPayload(
  devnet: Devnet,
  payer: DevAccount,
  accepted: BatchRequirements,
  depositMultiplier?: number,
): Promise<Record<string, unknown>> {
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  const scheme = depositMultiplier
    ? new BatchClient(officialSigner(devnet, payer), { depositPolicy: { depositMultiplier } })
    : new BatchClient(officialSigner(devnet, payer));
  client.register(devnet.network, scheme);
  const payment = (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [accepted],
    // biome-ignore lint/suspicious/noExplicitAny: the client's types are version unions.
  } as any)) as unknown as { payload: Record<string, unknown> };
  return payment.payload;
}

/** The channel the official client opens for `payer` and these requirements. */
export const officialChannelConfig = (
  devnet: Devnet,
  payer: DevAccount,
  accepted: BatchRequirements,
) => new BatchClient(officialSigner(devnet, payer)).buildChannelConfig(accepted as never);

/**
 * The official client's channel for `payer` under `accepted`: its configuration, its id (the
 * official client's, not ours), and the payer's voucher for a cumulative amount (signed by
 * `signer` instead, for a voucher the payer never signed).
 */
export function officialChannel(devnet: Devnet, payer: DevAccount, accepted: BatchRequirements) {
  const config = officialChannelConfig(devnet, payer, accepted);
  const id = computeChannelId(config, devnet.network) as Hex;
  const voucher = (amount: bigint, signer: DevAccount = payer) =>
    signVoucher(officialSigner(devnet, signer), id, amount.toString(), devnet.network);
  /** A claim row for `total`, with the voucher for it (or `voucher`, given). */
  const claimRow = async (total: bigint, given?: { signature: Hex }) => ({
    voucher: { channel: config, maxClaimableAmount: total.toString() },
    signature: (given ?? (await voucher(total))).signature,
    totalClaimed: total.toString(),
  });
  return { config, id, voucher, claimRow };
}

/** An x402-dialect request paying `accepted` with the scheme payload `payload`. */
export const x402Request = (accepted: unknown, payload: unknown) => ({
  x402Version: 2,
  paymentPayload: { x402Version: 2, resource: { url: "http://localhost/m" }, accepted, payload },
  paymentRequirements: accepted,
});

/** The requirements a seller's channel manager sends with a claim, settle or refund. */
export const managerRequirements = (accepted: BatchRequirements) => ({
  ...accepted,
  amount: "0",
  extra: {},
});

/** Listens on a free loopback port; `servers` collects it for closing. */
export function listen(app: express.Express, servers: Server[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const server = app.listen(0, "127.0.0.1", (error?: Error) => {
      if (error) return reject(error);
      servers.push(server);
      const address = server.address();
      resolve(`http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`);
    });
  });
}

/**
 * A seller on the official stack selling GET /metered: its facilitator is `facilitatorUrl`; it
 * signs its own claims with `ownSigner` when given, else leaves them to the facilitator's key
 * (then its refunds need an `apiKey` bound to its `payTo`).
 */
export async function officialSeller(
  devnet: Devnet,
  facilitatorUrl: string,
  servers: Server[],
  options: {
    payTo: Address;
    price: bigint;
    token?: Token;
    method?: "eip3009" | "permit2";
    ownSigner?: Hex;
    /** The seller's API key at our facilitator (one bound to `payTo` may ask for refunds). */
    apiKey?: string;
  },
) {
  const token = options.token ?? devnet.token;
  const { apiKey } = options;
  const facilitator = new HTTPFacilitatorClient({
    url: facilitatorUrl,
    timeoutMs: 30_000,
    ...(apiKey
      ? {
          createAuthHeaders: async () => {
            const headers = { Authorization: `Bearer ${apiKey}` };
            return { verify: headers, settle: headers, supported: headers };
          },
        }
      : {}),
  });
  const scheme = new BatchServer(options.payTo, {
    withdrawDelay: 900,
    ...(options.ownSigner
      ? { receiverAuthorizerSigner: privateKeyToAccount(options.ownSigner) }
      : {}),
  });
  const resources = new x402ResourceServer(facilitator).register(devnet.network, scheme);
  const app = express();
  app.use(
    paymentMiddleware(
      {
        "GET /metered": {
          accepts: {
            scheme: "batch-settlement",
            network: devnet.network,
            payTo: options.payTo,
            price: {
              amount: options.price.toString(),
              asset: token.address,
              extra: {
                name: token.name,
                version: token.version,
                ...(options.method === "permit2" ? { assetTransferMethod: "permit2" } : {}),
              },
            },
            maxTimeoutSeconds: 120,
          },
          description: "A metered resource",
          mimeType: "application/json",
        },
      },
      resources,
    ),
  );
  app.get("/metered", (_request, response) => {
    response.json({ ok: true });
  });
  const url = await listen(app, servers);
  const manager = scheme.createChannelManager(facilitator, devnet.network, token.address);
  return { url, manager, scheme };
}

/** An official buyer paying through @x402/fetch; `sent` keeps each payment header, for replays. */
export function officialBuyer(devnet: Devnet, payer: DevAccount) {
  // The devnet's tokens are no default assets: the buyer's spend controls would refuse them.
  const client = x402FetchClient.fromConfig({ schemes: [], spendControls: false });
  client.register(devnet.network, new BatchClient(officialSigner(devnet, payer)));
  const sent: Record<string, string>[] = [];
  const recording: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const header = request.headers.get("payment-signature");
    if (header) sent.push({ "payment-signature": header });
    return fetch(request);
  };
  return { pay: wrapFetchWithPayment(recording, client), sent };
}
