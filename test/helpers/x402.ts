/**
 * Test fixtures: a devnet per test file, payloads made by the official x402 client (@x402/evm),
 * and the reference facilitator (@x402/core + @x402/evm) wired to the same chain for parity checks.
 */
import { x402Client } from "@x402/core/client";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme as ExactEvmClient } from "@x402/evm/exact/client";
import { ExactEvmScheme as ExactEvmFacilitator } from "@x402/evm/exact/facilitator";
import { ExactEvmSchemeV1 as ExactEvmClientV1 } from "@x402/evm/exact/v1/client";
import { ExactEvmSchemeV1 as ExactEvmFacilitatorV1 } from "@x402/evm/exact/v1/facilitator";
import { type Address, createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { DevAccount, Devnet } from "../../src/evm/devnet/index.js";

export interface RequirementsOverrides {
  amount?: string;
  payTo?: Address;
  asset?: Address;
  maxTimeoutSeconds?: number;
  extra?: Record<string, unknown>;
  network?: string;
}

/** x402 v2 PaymentRequirements for the devnet's test USDC. */
export function requirementsV2(devnet: Devnet, overrides: RequirementsOverrides = {}) {
  return {
    scheme: "exact",
    network: overrides.network ?? devnet.network,
    amount: overrides.amount ?? "10000",
    asset: overrides.asset ?? devnet.token.address,
    payTo: overrides.payTo ?? devnet.payee.address,
    maxTimeoutSeconds: overrides.maxTimeoutSeconds ?? 300,
    extra: overrides.extra ?? { name: devnet.token.name, version: devnet.token.version },
  };
}

/** x402 v1 PaymentRequirements; the devnet must run with chain id 84532 (base-sepolia). */
export function requirementsV1(devnet: Devnet, overrides: RequirementsOverrides = {}) {
  if (!devnet.v1Network) throw new Error("v1 tests need a devnet started with chainId 84532");
  return {
    scheme: "exact",
    network: overrides.network ?? devnet.v1Network,
    maxAmountRequired: overrides.amount ?? "10000",
    resource: "http://localhost/paid",
    description: "a paid resource",
    mimeType: "application/json",
    asset: overrides.asset ?? devnet.token.address,
    payTo: overrides.payTo ?? devnet.payee.address,
    maxTimeoutSeconds: overrides.maxTimeoutSeconds ?? 300,
    extra: overrides.extra ?? { name: devnet.token.name, version: devnet.token.version },
  };
}

type Requirements = ReturnType<typeof requirementsV2> | ReturnType<typeof requirementsV1>;

/** Signs a payment with the official x402 client, as a real buyer would. */
export async function clientPayload(payer: DevAccount, requirements: Requirements) {
  const account = privateKeyToAccount(payer.privateKey);
  const isV1 = "maxAmountRequired" in requirements;
  // Spend controls only allow well-known assets: the devnet token is not one.
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  if (isV1) client.registerV1(requirements.network, new ExactEvmClientV1(account));
  else client.register(requirements.network as `${string}:${string}`, new ExactEvmClient(account));
  const paymentRequired = isV1
    ? { x402Version: 1, accepts: [requirements] }
    : { x402Version: 2, resource: { url: "http://localhost/paid" }, accepts: [requirements] };
  // biome-ignore lint/suspicious/noExplicitAny: the client's types are version-specific unions.
  return client.createPaymentPayload(paymentRequired as any);
}

/** The reference SDK's facilitator signer for `settler` on the devnet (as its examples wire it). */
export function referenceSigner(
  devnet: Devnet,
  settler: DevAccount,
  options: { confirmationTimeoutMs?: number } = {},
) {
  const wallet = createWalletClient({
    account: privateKeyToAccount(settler.privateKey),
    transport: http(devnet.rpcUrl),
  }).extend(publicActions);
  return toFacilitatorEvmSigner(
    {
      address: wallet.account.address,
      // biome-ignore lint/suspicious/noExplicitAny: forwarding viem calls as the SDK's examples do.
      readContract: (args: any) => wallet.readContract({ ...args, args: args.args ?? [] }),
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      verifyTypedData: (args: any) => wallet.verifyTypedData(args),
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      writeContract: (args: any) =>
        wallet.writeContract({ ...args, args: args.args ?? [], chain: null }),
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      sendTransaction: (args: any) => wallet.sendTransaction({ ...args, chain: null }),
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      waitForTransactionReceipt: (args: any) => wallet.waitForTransactionReceipt(args),
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      getCode: (args: any) => wallet.getCode(args),
    },
    options,
  );
}

/**
 * The reference facilitator (x402 SDK 2.27) on the same chain, with its own settlement key;
 * counterfactual (ERC-6492) wallets only from `eip6492AllowedFactories` (default: none).
 */
export function referenceFacilitator(
  devnet: Devnet,
  settler: DevAccount,
  options: { eip6492AllowedFactories?: string[]; confirmationTimeoutMs?: number } = {},
) {
  const signer = referenceSigner(devnet, settler, options);
  const facilitator = new x402Facilitator();
  facilitator.register(
    devnet.network,
    new ExactEvmFacilitator(signer, {
      eip6492AllowedFactories: options.eip6492AllowedFactories ?? [],
    }),
  );
  if (devnet.v1Network)
    facilitator.registerV1(devnet.v1Network as never, new ExactEvmFacilitatorV1(signer));
  return facilitator;
}

/** Registers erc20ApprovalGasSponsoring on the reference with a signer that reads but never sends. */
export function verifyApprovalsOn(
  reference: { registerExtension(extension: never): unknown },
  devnet: Devnet,
  reader: DevAccount,
): void {
  reference.registerExtension({
    key: "erc20ApprovalGasSponsoring",
    signer: {
      ...referenceSigner(devnet, reader),
      sendTransactions: () => Promise.reject(new Error("not in these tests")),
    },
  } as never);
}
