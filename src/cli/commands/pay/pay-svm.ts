/** `facilitator pay` on Solana: an `exact` payment signed as the official @x402/svm client does. */
import { DEFAULT_RESOURCE, requestBody } from "../../../evm/client/sign-payment.js";
import { FacilitatorError } from "../../../protocol/errors.js";
import { parseJson } from "../../../protocol/request.js";
import {
  isSolanaAddress,
  knownMintSymbol,
  solanaCluster,
} from "../../../protocol/solana-networks.js";
import { firstLine } from "../../../protocol/words.js";
import { isUnreachable, type RpcRegistry } from "../../../rpc/rpc.js";
import { svmFeePayerOf, svmFeePayerOfBytes } from "../../../svm/chain/keys.js";
import {
  latestBlockhash,
  MAX_MEMO_BYTES,
  NotAMint,
  readMint,
  type SvmCall,
  type SvmMint,
  signSvmTransfer,
  svmPaymentPayload,
} from "../../../svm/client/sign-payment.js";
import { secretKeyBytes } from "../../../svm/devnet/keys.js";
import {
  DEFAULT_PAYER_COUNT,
  DEVNET_USDC_MINT,
  devnetKeys,
  isSvmDevnetMint,
} from "../../../svm/devnet/setup.js";
import { UsageError } from "../../io/errors.js";
import { keyLines } from "../../settings/config-keys.js";
import { atomicAmount, describeAmount } from "./pay-amounts.js";
import type { PayFlags } from "./pay-flags.js";
import { addressGiven, payerOf } from "./pay-payer.js";
import {
  fail,
  maxTimeoutOf,
  type PayTarget,
  type PickedRequirements,
  payRequirements,
} from "./pay-requirements.js";

/** The payer's secret key from --payer-key-file: base58 or a solana-keygen JSON array. */
function svmPayerKeyOf(text: string): Uint8Array | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith("[")) {
    const line = keyLines(trimmed)[0];
    return line === undefined ? undefined : svmFeePayerOf(line)?.secretKey;
  }
  const parsed = parseJson(trimmed);
  const numbers: unknown[] = parsed.ok && Array.isArray(parsed.value) ? parsed.value : [];
  const bytes = numbers.every(
    (n) => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 255,
  );
  // Not 64 bytes, or not a secret key and its public key: svmFeePayerOfBytes says undefined.
  return bytes ? svmFeePayerOfBytes(Uint8Array.from(numbers as number[]))?.secretKey : undefined;
}

function solanaAddress(value: string, named: string): string {
  if (!isSolanaAddress(value)) throw new UsageError(`${named} is not a Solana address (base58)`);
  return value;
}

/** Token units ("0.01") in atomic units, with the mint's decimals; a u64 at most. */
async function splAmount(text: string, decimals: number): Promise<bigint> {
  const amount = await atomicAmount(text, async () => ({ decimals }));
  if (amount >= 2n ** 64n) throw new UsageError("--amount is more than a Solana token holds");
  return amount;
}

/** JSON-RPC to the cluster; an error answer is the cluster's failure, not the payment's. */
function callOf(client: Awaited<ReturnType<RpcRegistry["solanaClient"]>>, named: string): SvmCall {
  return async (method, params) => {
    try {
      return await client.request({ method, params } as never);
    } catch (error) {
      if (isUnreachable(error)) throw error;
      const text = firstLine(error);
      throw FacilitatorError.of(
        "chain_unavailable",
        `the Solana RPC for ${named} answered ${method} with an error: ${text}`,
      );
    }
  };
}

async function mintAt(call: SvmCall, address: string, network: string): Promise<SvmMint> {
  try {
    return await readMint(call, address);
  } catch (error) {
    if (error instanceof NotAMint) {
      throw new UsageError(`the asset ${address} is no token mint on ${network}: ${error.message}`);
    }
    throw error;
  }
}

export async function buildSvmRequest(
  flags: PayFlags,
  rpc: RpcRegistry,
  target: Extract<PayTarget, { kind: "svm" }>,
  fromFile: PickedRequirements | undefined,
): Promise<{ body: unknown; summary: string }> {
  if (flags.method !== undefined) {
    throw new UsageError(
      "--method is for EVM payments: a Solana payment is one TransferChecked the payer signs",
    );
  }
  if (flags.approval) throw new UsageError("--approval is for EVM payments (--method permit2)");
  const { network, named } = target;
  const call = callOf(await rpc.solanaClient(network, named), named);
  const base = fromFile?.requirements;
  const extra: Record<string, unknown> = { ...(base?.extra ?? {}) };
  const assetGiven = addressGiven(solanaAddress, ["--asset", flags.asset], ["asset", base?.asset]);
  const payToGiven = addressGiven(solanaAddress, ["--to", flags.to], ["payTo", base?.payTo]);
  const feePayerGiven = addressGiven(
    solanaAddress,
    ["--fee-payer", flags.feePayer],
    ["extra.feePayer", typeof extra.feePayer === "string" ? extra.feePayer : undefined],
  );

  const needsDevnet =
    flags.payerKeyFile === undefined ||
    assetGiven === undefined ||
    payToGiven === undefined ||
    feePayerGiven === undefined ||
    (flags.amount === undefined && fromFile === undefined);
  const devnetMint = needsDevnet
    ? await readMint(call, DEVNET_USDC_MINT).catch((error: unknown) => {
        if (error instanceof NotAMint) return undefined;
        throw error;
      })
    : undefined;
  const devnet = devnetMint !== undefined && isSvmDevnetMint(devnetMint);
  const roles = devnet ? devnetKeys() : undefined;
  const missing = (flag: string) =>
    new UsageError(`${flag} is needed: ${named} is no local devnet with defaults`);

  const asset = assetGiven ?? (devnet ? DEVNET_USDC_MINT : fail(missing("--asset")));
  const payTo = payToGiven ?? roles?.payee.address ?? fail(missing("--to"));
  const feePayer =
    feePayerGiven ??
    roles?.feePayer.address ??
    fail(
      new UsageError(
        `who pays the fee? a Solana payment names the facilitator's fee payer: pass --fee-payer ADDRESS (the facilitator's "solana:*" signer in its GET /supported), or --requirements with extra.feePayer`,
      ),
    );
  const payerKey = payerOf(
    flags,
    (text) =>
      svmPayerKeyOf(text) ??
      fail(
        new UsageError(
          `--payer-key-file holds no Solana secret key (the payment is on ${named}): a base58 64-byte secret key, or a solana-keygen JSON array of 64 numbers`,
        ),
      ),
    // The devnet's keys, as `facilitator devnet --svm` funds them.
    roles && {
      payers: roles.payers.map(secretKeyBytes),
      range: `${DEFAULT_PAYER_COUNT} on Solana`,
    },
    [
      `--payer picks a local devnet payer, and ${named} is no local devnet: use --payer-key-file FILE`,
      "who pays? pass --payer-key-file FILE (the payer's Solana key; never a flag value)",
    ],
  );
  const mint =
    devnetMint && asset === devnetMint.address ? devnetMint : await mintAt(call, asset, named);
  const amount =
    flags.amount !== undefined
      ? await splAmount(flags.amount, mint.decimals)
      : fromFile
        ? fromFile.amount
        : devnet
          ? 10_000n
          : fail(missing("--amount"));
  const memo = typeof extra.memo === "string" ? extra.memo : undefined;
  if (memo !== undefined && new TextEncoder().encode(memo).byteLength > MAX_MEMO_BYTES) {
    throw new UsageError(`the requirements' extra.memo is longer than ${MAX_MEMO_BYTES} bytes`);
  }
  const maxTimeoutSeconds = maxTimeoutOf(flags.validFor, base);
  const x402Version: 1 | 2 = flags.v1 ? 1 : (fromFile?.x402Version ?? 2);
  const networkName =
    x402Version === 1
      ? (solanaCluster(network)?.v1Name ??
        fail(
          new UsageError(
            `--v1 needs a Solana cluster with an x402 v1 name (solana, solana-devnet, solana-testnet); ${network} has none`,
          ),
        ))
      : network;
  extra.feePayer = feePayer;
  const requirements = payRequirements(
    x402Version,
    base,
    {
      scheme: "exact",
      network: networkName,
      asset,
      payTo,
      maxTimeoutSeconds,
      extra,
      amount: `${amount}`,
    },
    DEFAULT_RESOURCE.url,
  );
  const { payer, transaction } = await signSvmTransfer({
    payerSecretKey: payerKey,
    feePayer,
    mint,
    payTo,
    amount,
    // The seller's blockhash when `extra` carries one (as the official client uses it), else ours.
    blockhash: isSolanaAddress(extra.recentBlockhash)
      ? extra.recentBlockhash
      : await latestBlockhash(call),
    memo,
  });
  const payload = svmPaymentPayload(x402Version, requirements, transaction);
  const body = requestBody(flags.x402 ? "x402" : "reference", x402Version, payload, requirements);
  return {
    body,
    summary: `${describeAmount(amount, asset, { decimals: mint.decimals, symbol: knownMintSymbol(asset) })} from ${payer} to ${payTo} on ${networkName} (SPL TransferChecked; fee payer ${feePayer})`,
  };
}
