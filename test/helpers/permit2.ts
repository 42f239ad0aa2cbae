/**
 * Test fixtures for Permit2 payments on the devnet: requirements, payloads signed by the official
 * x402 client, direct calls to our Permit2 / proxy contracts, and revert decoding.
 */
import { x402Client } from "@x402/core/client";
import { ExactEvmScheme as ExactEvmClient } from "@x402/evm/exact/client";
import {
  type Abi,
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { formatAbiItem, formatAbiParams } from "viem/utils";
import {
  permit2Abi,
  testPermitTokenAbi,
  x402ExactPermit2ProxyAbi,
  x402UptoPermit2ProxyAbi,
} from "../../src/evm/devnet/artifacts.js";
import { type DevAccount, type Devnet, devnetChain } from "../../src/evm/devnet/index.js";
import type { Permit2PaymentJson } from "../../src/evm/devnet/sign-permit2.js";

const permit2Errors = permit2Abi.filter((item) => item.type === "error");
const tokenErrors = testPermitTokenAbi.filter((item) => item.type === "error");

/** The exact proxy's ABI plus the errors of the contracts it calls, so reverts decode by name. */
export const exactProxyAbi = [...x402ExactPermit2ProxyAbi, ...permit2Errors, ...tokenErrors];
export const uptoProxyAbi = [...x402UptoPermit2ProxyAbi, ...permit2Errors, ...tokenErrors];

export interface PermitToken {
  address: Address;
  name: string;
  version?: string;
}

/** x402 v2 requirements for a Permit2 exact payment of `token`. */
export function permit2Requirements(
  devnet: Devnet,
  token: PermitToken,
  overrides: { amount?: string; payTo?: Address } = {},
) {
  return {
    scheme: "exact",
    network: devnet.network,
    amount: overrides.amount ?? "10000",
    asset: token.address,
    payTo: overrides.payTo ?? devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: {
      name: token.name,
      ...(token.version ? { version: token.version } : {}),
      assetTransferMethod: "permit2",
    },
  };
}

/** What a resource server declares (PaymentRequired.extensions) to offer EIP-2612 sponsoring. */
export const EIP2612_SPONSORING_DECLARATION = {
  eip2612GasSponsoring: { info: { description: "gasless EIP-2612 approval", version: "1" } },
};

/** What a resource server declares to offer ERC-20 approval gas sponsoring. */
export const ERC20_APPROVAL_DECLARATION = {
  erc20ApprovalGasSponsoring: { info: { description: "gasless approval", version: "1" } },
};

/**
 * A PaymentPayload signed by the official x402 client. With `eip2612GasSponsoring`, the server
 * offers the extension and the client (given an RPC to read allowance and permit nonce) signs the
 * EIP-2612 permit if the payer has not approved Permit2 enough.
 */
export async function officialPermit2Payload(
  devnet: Devnet,
  payer: DevAccount,
  requirements: ReturnType<typeof permit2Requirements>,
  options: { eip2612GasSponsoring?: boolean; erc20ApprovalGasSponsoring?: boolean } = {},
) {
  const account = privateKeyToAccount(payer.privateKey);
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(devnet.network, new ExactEvmClient(account, { rpcUrl: devnet.rpcUrl }));
  return client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/paid" },
    accepts: [requirements],
    ...(options.eip2612GasSponsoring ? { extensions: EIP2612_SPONSORING_DECLARATION } : {}),
    ...(options.erc20ApprovalGasSponsoring ? { extensions: ERC20_APPROVAL_DECLARATION } : {}),
    // biome-ignore lint/suspicious/noExplicitAny: the client's types are version-specific unions.
  } as any);
}

export function clientsOf(devnet: Devnet, sender: DevAccount = devnet.facilitator) {
  const chain = devnetChain(devnet.rpcUrl, devnet.chainId);
  const transport = http(devnet.rpcUrl, { retryCount: 0 });
  return {
    publicClient: createPublicClient({ chain, transport, pollingInterval: 50, cacheTime: 0 }),
    wallet: createWalletClient({
      chain,
      transport,
      account: privateKeyToAccount(sender.privateKey),
    }),
  };
}

/** The exact proxy's `settle` arguments for a signed Permit2 payment. */
export function exactSettleArgs(
  payment: Permit2PaymentJson,
  changes: { owner?: Address; to?: Address; signature?: Hex } = {},
) {
  const a = payment.permit2Authorization;
  return [
    {
      permitted: { token: a.permitted.token, amount: BigInt(a.permitted.amount) },
      nonce: BigInt(a.nonce),
      deadline: BigInt(a.deadline),
    },
    changes.owner ?? a.from,
    { to: changes.to ?? a.witness.to, validAfter: BigInt(a.witness.validAfter) },
    changes.signature ?? payment.signature,
  ] as const;
}

/** Splits a 65-byte signature into the proxy's EIP2612Permit fields (with value and deadline). */
export function permit2612Of(info: { amount: string; deadline: string; signature: string }) {
  const sig = info.signature as Hex;
  return {
    value: BigInt(info.amount),
    deadline: BigInt(info.deadline),
    r: `0x${sig.slice(2, 66)}` as Hex,
    s: `0x${sig.slice(66, 130)}` as Hex,
    v: Number.parseInt(sig.slice(130, 132), 16),
  };
}

/**
 * Runs `call` (a simulation) and returns the name and arguments of the custom error it reverted
 * with, or the revert reason string; throws if it did not revert.
 */
export async function revertOf(
  call: Promise<unknown>,
): Promise<{ name: string; args: readonly unknown[] }> {
  try {
    await call;
  } catch (error) {
    if (error instanceof BaseError) {
      const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
      if (reverted instanceof ContractFunctionRevertedError) {
        if (reverted.data?.errorName === "Error") {
          return { name: String(reverted.data.args?.[0]), args: [] };
        }
        if (reverted.data) {
          return { name: reverted.data.errorName, args: reverted.data.args ?? [] };
        }
        if (reverted.reason) return { name: reverted.reason, args: [] };
        return { name: "<no data>", args: [] };
      }
    }
    throw error;
  }
  throw new Error("the call did not revert");
}

/** Each item of `abi` as "kind name(input types) returns (output types)": what selectors hash. */
export function abiSignatures(abi: readonly unknown[]): Set<string> {
  const signatures = new Set<string>();
  for (const item of abi as { type: string; outputs?: readonly unknown[] }[]) {
    if (!["function", "event", "error"].includes(item.type)) continue;
    const outputs = item.outputs ? ` returns (${formatAbiParams(item.outputs as never)})` : "";
    signatures.add(`${item.type} ${formatAbiItem(item as never)}${outputs}`);
  }
  return signatures;
}

/** Sends a contract call from `sender`, waits for the receipt and returns it. */
export async function send(
  devnet: Devnet,
  sender: DevAccount,
  request: { address: Address; abi: Abi; functionName: string; args: readonly unknown[] },
) {
  const { publicClient, wallet } = clientsOf(devnet, sender);
  const hash = await wallet.writeContract({
    ...request,
    chain: wallet.chain,
    account: wallet.account,
  } as never);
  return publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
}
