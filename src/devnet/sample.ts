/**
 * Signed example requests for the devnet, so `verify` and `settle` have something real to chew on.
 * Signed with viem here; the tests sign with the official x402 client instead.
 */
import { type Address, bytesToHex, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { transferWithAuthorizationTypedData } from "../schemes/exact-evm/eip3009-encoding.js";
import type { DevAccount } from "./accounts.js";
import type { DevnetInfo } from "./setup.js";

export interface SampleOptions {
  readonly payer: DevAccount;
  readonly payTo?: Address;
  /** Atomic units (6 decimals): 10000n is 0.01 USDC. */
  readonly amount?: bigint;
  readonly validForSeconds?: number;
  readonly x402Version?: 1 | 2;
  readonly dialect?: "reference" | "x402";
}

export async function signSampleRequest(devnet: DevnetInfo, options: SampleOptions) {
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
  const resource = "http://localhost:4021/weather";

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
          resource: { url: resource, description: "devnet example", mimeType: "application/json" },
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
