/** The devnet's example requests, signed as `pay` signs (tests: the x402 client signs the same). */
import type { Address } from "viem";
import {
  approvalTerms,
  type RequirementsJson,
  requestBody,
  signPayment,
} from "../client/sign-payment.js";
import type { DevAccount } from "./accounts.js";
import { type DevnetInfo, devnetReader } from "./setup.js";
import { permitNonce } from "./sign-permit.js";

interface SampleOptions {
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
  /** permit2 only: carry the payer's EIP-2612 approval of Permit2 (eip2612GasSponsoring). */
  readonly eip2612GasSponsoring?: boolean;
  /** permit2 only: carry the payer's signed approval of Permit2 (erc20ApprovalGasSponsoring). */
  readonly erc20ApprovalGasSponsoring?: boolean;
}

export async function signSampleRequest(devnet: DevnetInfo, options: SampleOptions) {
  const method = options.method ?? "eip3009";
  const asset = options.asset ?? "usdc";
  const x402Version = options.x402Version ?? 2;
  if (method === "eip3009" && asset !== "usdc") {
    throw new Error(`the ${asset} token has no EIP-3009: use method "permit2"`);
  }
  if (method === "permit2" && x402Version !== 2)
    throw new Error("Permit2 payments are x402 v2 only");
  if (x402Version === 1 && !devnet.v1Network) {
    throw new Error("x402 v1 needs a network name: start the devnet with --chain-id 84532");
  }
  const token =
    asset === "permit" ? devnet.permitToken : asset === "plain" ? devnet.plainToken : devnet.token;
  const eip712 = "version" in token ? { name: token.name, version: token.version } : undefined;
  if (options.eip2612GasSponsoring && !eip712) {
    throw new Error("the plain token has no EIP-2612 permit to sponsor");
  }
  const payTo = options.payTo ?? devnet.payee.address;
  const amount = options.amount ?? 10_000n;
  const extra =
    method === "permit2" ? { ...eip712, assetTransferMethod: "permit2" } : { ...eip712 };
  const terms = { asset: token.address, payTo, maxTimeoutSeconds: 300, extra };
  const requirements: RequirementsJson =
    x402Version === 2
      ? { scheme: "exact", network: devnet.network, amount: amount.toString(), ...terms }
      : {
          scheme: "exact",
          network: devnet.v1Network as string,
          maxAmountRequired: amount.toString(),
          resource: "http://localhost:4021/weather",
          description: "devnet example",
          mimeType: "application/json",
          ...terms,
        };
  const eip2612Nonce =
    options.eip2612GasSponsoring && eip712
      ? await permitNonce(devnet, token.address, options.payer.address)
      : undefined;
  const approval = options.erc20ApprovalGasSponsoring
    ? await approvalTerms(devnetReader(devnet), options.payer.address)
    : undefined;
  const payload = await signPayment(options.payer, {
    chainId: devnet.chainId,
    x402Version,
    requirements,
    amount,
    method,
    validForSeconds: options.validForSeconds ?? 24 * 3600,
    eip2612Nonce,
    approval,
  });
  return requestBody(options.dialect ?? "reference", x402Version, payload, requirements);
}
