/**
 * Signed example requests for the devnet, so `verify` and `settle` have something real to chew on.
 * Signed with viem here; the tests sign with the official x402 client instead (and check that
 * both sign the same thing).
 */
import { type Address, bytesToHex, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { transferWithAuthorizationTypedData } from "../schemes/exact-evm/eip3009-encoding.js";
import type { DevAccount } from "./accounts.js";
import type { DevnetInfo } from "./setup.js";
import { signEip2612GasSponsoring, signPermit2Payment } from "./sign-permit2.js";

export interface SampleOptions {
  readonly payer: DevAccount;
  readonly payTo?: Address;
  /** Atomic units (6 decimals): 10000n is 0.01 USDC. */
  readonly amount?: bigint;
  readonly validForSeconds?: number;
  readonly x402Version?: 1 | 2;
  readonly dialect?: "reference" | "x402";
  /** EIP-3009 (default), or Permit2 through the x402 exact proxy (x402 v2 only). */
  readonly method?: "eip3009" | "permit2";
  /** The token: TestUSDC (default), TestPermitToken or TestPlainToken (the last two: permit2). */
  readonly asset?: "usdc" | "permit" | "plain";
  /**
   * permit2 only: carry the payer's EIP-2612 approval of Permit2 in the eip2612GasSponsoring
   * extension, so the payment settles without a prior approval (TestUSDC or TestPermitToken).
   */
  readonly eip2612GasSponsoring?: boolean;
}

const RESOURCE = {
  url: "http://localhost:4021/weather",
  description: "devnet example",
  mimeType: "application/json",
};

export async function signSampleRequest(devnet: DevnetInfo, options: SampleOptions) {
  if (options.method === "permit2") return signPermit2SampleRequest(devnet, options);
  if ((options.asset ?? "usdc") !== "usdc") {
    throw new Error(`the ${options.asset} token has no EIP-3009: use method "permit2"`);
  }
  const version = options.x402Version ?? 2;
  if (version === 1 && !devnet.v1Network) {
    throw new Error("x402 v1 needs a network name: start the devnet with --chain-id 84532");
  }
  const payTo = options.payTo ?? devnet.payee.address;
  const amount = options.amount ?? 10_000n;
  const now = Math.floor(Date.now() / 1000);
  const authorization = {
    from: options.payer.address,
    to: payTo,
    value: amount.toString(),
    validAfter: "0",
    validBefore: String(now + (options.validForSeconds ?? 24 * 3600)),
    nonce: bytesToHex(crypto.getRandomValues(new Uint8Array(32))) as Hex,
  };
  const signature = await privateKeyToAccount(options.payer.privateKey).signTypedData(
    transferWithAuthorizationTypedData(
      {
        name: devnet.token.name,
        version: devnet.token.version,
        chainId: devnet.chainId,
        verifyingContract: devnet.token.address,
      },
      {
        ...authorization,
        value: amount,
        validAfter: 0n,
        validBefore: BigInt(authorization.validBefore),
      },
    ),
  );
  const extra = { name: devnet.token.name, version: devnet.token.version };
  const resource = RESOURCE.url;

  const requirements =
    version === 2
      ? {
          scheme: "exact",
          network: devnet.network,
          amount: amount.toString(),
          asset: devnet.token.address,
          payTo,
          maxTimeoutSeconds: 300,
          extra,
        }
      : {
          scheme: "exact",
          network: devnet.v1Network,
          maxAmountRequired: amount.toString(),
          resource,
          description: "devnet example",
          mimeType: "application/json",
          asset: devnet.token.address,
          payTo,
          maxTimeoutSeconds: 300,
          extra,
        };
  const payload =
    version === 2
      ? {
          x402Version: 2,
          resource: RESOURCE,
          accepted: requirements,
          payload: { signature, authorization },
        }
      : {
          x402Version: 1,
          scheme: "exact",
          network: devnet.v1Network,
          payload: { signature, authorization },
        };
  return options.dialect === "x402"
    ? { x402Version: version, paymentPayload: payload, paymentRequirements: requirements }
    : { payload, requirements };
}

/** A Permit2 exact payment (x402 v2), optionally with the eip2612GasSponsoring extension. */
async function signPermit2SampleRequest(devnet: DevnetInfo, options: SampleOptions) {
  if ((options.x402Version ?? 2) !== 2) throw new Error("Permit2 payments are x402 v2 only");
  const asset = options.asset ?? "usdc";
  const token =
    asset === "permit" ? devnet.permitToken : asset === "plain" ? devnet.plainToken : devnet.token;
  const eip712 = "version" in token ? { name: token.name, version: token.version } : undefined;
  if (options.eip2612GasSponsoring && !eip712) {
    throw new Error("the plain token has no EIP-2612 permit to sponsor");
  }
  const payTo = options.payTo ?? devnet.payee.address;
  const amount = options.amount ?? 10_000n;
  const requirements = {
    scheme: "exact",
    network: devnet.network,
    amount: amount.toString(),
    asset: token.address,
    payTo,
    maxTimeoutSeconds: 300,
    extra: { ...eip712, assetTransferMethod: "permit2" },
  };
  const now = BigInt(Math.floor(Date.now() / 1000));
  const deadline = now + BigInt(options.validForSeconds ?? 24 * 3600);
  const payload = await signPermit2Payment(
    devnet.chainId,
    options.payer,
    { asset: token.address, amount, payTo, maxTimeoutSeconds: requirements.maxTimeoutSeconds },
    { deadline },
  );
  const extensions =
    options.eip2612GasSponsoring && eip712
      ? {
          eip2612GasSponsoring: {
            info: await signEip2612GasSponsoring(
              devnet,
              options.payer,
              { address: token.address, ...eip712 },
              amount,
              deadline,
            ),
          },
        }
      : undefined;
  const paymentPayload = {
    x402Version: 2,
    payload,
    ...(extensions ? { extensions } : {}),
    resource: RESOURCE,
    accepted: requirements,
  };
  return options.dialect === "x402"
    ? { x402Version: 2, paymentPayload, paymentRequirements: requirements }
    : { payload: paymentPayload, requirements };
}
