/** `facilitator pay`: signs a payment as a buyer would and prints the body verify/settle read. */
import { type Address, getContract, isAddress, type PublicClient } from "viem";
import { failureOfThrown } from "../../../core/thrown.js";
import { BATCH_SETTLEMENT as BATCH } from "../../../evm/batch-settlement/constants.js";
import {
  approvalTerms,
  type RequirementsJson,
  requestBody,
  signPayment,
  type TransferMethod,
} from "../../../evm/client/sign-payment.js";
import { type DevAccount, payeeAccount } from "../../../evm/devnet/accounts.js";
import { isDevnetChain, isTestUsdcCode } from "../../../evm/devnet/detect.js";
import { DEFAULT_USDC_ADDRESS, usdcAddressFor } from "../../../evm/devnet/setup.js";
import type { TokenUnits } from "../../../protocol/amounts.js";
import { FacilitatorError } from "../../../protocol/errors.js";
import { caip2, knownNetwork } from "../../../protocol/networks.js";
import { isUnreachable, RpcRegistry } from "../../../rpc/rpc.js";
import { registryOptions } from "../../facilitator/facilitator.js";
import { warmCurve } from "../../facilitator/warm-curve.js";
import { UsageError } from "../../io/errors.js";
import { humanOutput, note, printJson, warn } from "../../io/output.js";
import { loadConfig } from "../../settings/config.js";
import { atomicAmount, describeAmount, payToken, tokenAbi } from "./pay-amounts.js";
import { batchExtra, permit2Allowance, signBatchPayment } from "./pay-batch.js";
import { buildChannelRequest, channelActionOf } from "./pay-channel.js";
import type { PayFlags } from "./pay-flags.js";
import { address, addressGiven, payerFrom } from "./pay-payer.js";
import {
  fail,
  maxTimeoutOf,
  type PayScheme,
  payRequirements,
  requirementsFile,
  targetOf,
} from "./pay-requirements.js";
import { buildSvmRequest } from "./pay-svm.js";

/** The token's EIP-712 name and version, read from the chain when the requirements lack them. */
async function tokenDomain(
  extra: Record<string, unknown>,
  asset: Address,
  client: () => Promise<PublicClient>,
): Promise<{ name: string; version: string } | undefined> {
  if (typeof extra.name === "string" && typeof extra.version === "string") {
    return { name: extra.name, version: extra.version };
  }
  try {
    const read = getContract({ address: asset, abi: tokenAbi, client: await client() }).read;
    const [name, version] = await Promise.all([read.name(), read.version()]);
    return { name, version };
  } catch (error) {
    if (isUnreachable(error)) throw error;
    return undefined;
  }
}

/** Permit2: a payer short of allowance signs the token's EIP-2612 permit too, if it has one. */
async function eip2612For(
  payer: DevAccount,
  asset: Address,
  amount: bigint,
  domain: { name: string; version: string } | undefined,
  client: PublicClient,
  quiet: boolean,
) {
  if ((await permit2Allowance(client, asset, payer.address)) >= amount) return undefined;
  const read = getContract({ address: asset, abi: tokenAbi, client }).read;
  const nonce = await read.nonces([payer.address]).catch((error: unknown) => {
    if (isUnreachable(error)) throw error;
    return undefined;
  });
  if (nonce === undefined || !domain) {
    if (!quiet) {
      warn(
        `the payer ${payer.address} has not approved Permit2 for this token, and the token has no EIP-2612 permit to do it with: settle will answer allowance_required until the payer approves Permit2`,
      );
    }
    return undefined;
  }
  return nonce;
}

async function buildRequest(flags: PayFlags, rpc: RpcRegistry) {
  const quiet = flags.quiet === true;
  const fromFile = await requirementsFile(flags, flags.scheme);
  const scheme: PayScheme =
    flags.scheme ?? (fromFile?.requirements.scheme === BATCH ? BATCH : "exact");
  if (scheme !== BATCH && (flags.deposit ?? flags.cumulative ?? flags.receiverAuthorizer)) {
    throw new UsageError(
      "--deposit, --cumulative and --receiver-authorizer go with --scheme batch-settlement",
    );
  }
  if (scheme === BATCH && (flags.v1 || fromFile?.x402Version === 1)) {
    throw new UsageError("batch-settlement is x402 v2 only");
  }
  const named = flags.network ?? fromFile?.requirements.network;
  // Chain not named: read the devnet token beside the eth_chainId that learns the chain.
  const unlearned = named === undefined ? rpc.unlearnedClient() : undefined;
  const guessed = unlearned && {
    code: unlearned.getCode({ address: DEFAULT_USDC_ADDRESS }),
    asset: flags.asset ?? DEFAULT_USDC_ADDRESS,
    domain: tokenDomain(
      { ...(fromFile?.requirements.extra ?? {}) },
      flags.asset && isAddress(flags.asset, { strict: false }) ? flags.asset : DEFAULT_USDC_ADDRESS,
      async () => unlearned,
    ),
  };
  guessed?.code.catch(() => undefined);
  guessed?.domain.catch(() => undefined);
  // Build the curve's table while the chain answers, once the reads are out.
  setImmediate(() => setImmediate(warmCurve));
  const target = await targetOf(named, rpc, scheme === BATCH ? BATCH : undefined);
  if (target.kind === "svm") {
    if (scheme === BATCH) throw new UsageError("batch-settlement is served on EVM chains only");
    return buildSvmRequest(flags, rpc, target, fromFile);
  }
  if (flags.feePayer !== undefined) {
    throw new UsageError("--fee-payer is for Solana payments: on EVM the facilitator pays the gas");
  }
  const { chainId } = target;
  let clientRead: Promise<PublicClient> | undefined;
  const client = () => (clientRead ??= rpc.client(chainId));
  const needsDevnet =
    flags.payerKeyFile === undefined ||
    (flags.asset ?? fromFile?.requirements.asset) === undefined ||
    (flags.to ?? fromFile?.requirements.payTo) === undefined ||
    (flags.amount === undefined && fromFile === undefined) ||
    (scheme === BATCH &&
      flags.receiverAuthorizer === undefined &&
      fromFile?.requirements.extra?.receiverAuthorizer === undefined);
  // The token's domain, read in the devnet check's round trip from where the asset likely is.
  const likelyAsset = flags.asset ?? fromFile?.requirements.asset ?? usdcAddressFor(chainId);
  const read = guessed && usdcAddressFor(chainId) === DEFAULT_USDC_ADDRESS ? guessed : undefined;
  const early =
    read && isAddress(read.asset, { strict: false })
      ? { asset: read.asset, domain: read.domain }
      : isAddress(likelyAsset, { strict: false })
        ? {
            asset: likelyAsset,
            domain: tokenDomain({ ...(fromFile?.requirements.extra ?? {}) }, likelyAsset, client),
          }
        : undefined;
  early?.domain.catch(() => undefined);
  const guessedCode = read?.code.then(
    (code) => ({ code }),
    () => undefined,
  );
  const readCode = needsDevnet ? await guessedCode : undefined;
  const devnet = !needsDevnet
    ? false
    : readCode
      ? isTestUsdcCode(readCode.code)
      : await isDevnetChain(await client(), chainId);
  const missing = (flag: string) =>
    new UsageError(`${flag} is needed: the chain eip155:${chainId} is no devnet with defaults`);

  const x402Version: 1 | 2 = flags.v1 ? 1 : (fromFile?.x402Version ?? 2);
  const base = fromFile?.requirements;
  const extra: Record<string, unknown> = { ...(base?.extra ?? {}) };
  const method: TransferMethod =
    flags.method ?? (extra.assetTransferMethod === "permit2" ? "permit2" : "eip3009");
  if (method === "permit2" && x402Version === 1)
    throw new UsageError("--method permit2 is x402 v2 only");
  const asset =
    addressGiven(address, ["--asset", flags.asset], ["asset", base?.asset]) ??
    (devnet ? usdcAddressFor(chainId) : fail(missing("--asset")));
  const payTo =
    addressGiven(address, ["--to", flags.to], ["payTo", base?.payTo]) ??
    (devnet ? payeeAccount.address : fail(missing("--to")));
  const payer = payerFrom(flags, devnet);
  let tokenRead: Promise<TokenUnits> | undefined;
  const token = () => (tokenRead ??= payToken(asset, chainId, client, devnet));
  const amount =
    flags.amount !== undefined
      ? await atomicAmount(flags.amount, token)
      : fromFile
        ? fromFile.amount
        : devnet
          ? 10_000n
          : fail(missing("--amount"));
  const domain =
    early && early.asset.toLowerCase() === asset.toLowerCase()
      ? await early.domain
      : await tokenDomain(extra, asset, client);
  if (method === "eip3009" && !domain) {
    throw new UsageError(
      `the token ${asset} has no EIP-712 name() and version() to sign for: is it an EIP-3009 token? (--method permit2 works with any ERC-20)`,
    );
  }
  const maxTimeoutSeconds = maxTimeoutOf(flags.validFor, base);
  Object.assign(extra, domain ?? {});
  if (method === "permit2") extra.assetTransferMethod = "permit2";
  const network =
    x402Version === 1
      ? (knownNetwork(chainId)?.v1Name ??
        fail(
          new UsageError(`--v1 needs a network with an x402 v1 name; eip155:${chainId} has none`),
        ))
      : caip2(chainId);
  const requirements = payRequirements(
    x402Version,
    base,
    { scheme: "exact", network, amount: amount.toString(), asset, payTo, maxTimeoutSeconds, extra },
    "http://localhost/paid",
  );
  if (scheme === BATCH) {
    if (flags.approval) throw new UsageError("--approval is for exact payments");
    const units = (text: string | undefined, flag: string) =>
      text === undefined
        ? undefined
        : atomicAmount(text, token).catch((error: Error) => {
            throw new UsageError(error.message.replace("--amount", flag));
          });
    const batchRequirements: RequirementsJson = {
      ...requirements,
      scheme: BATCH,
      extra: batchExtra(extra, devnet, flags.receiverAuthorizer),
    };
    const signed = await signBatchPayment(await client(), {
      chainId,
      requirements: batchRequirements,
      payer,
      amount,
      method,
      deposit: await units(flags.deposit, "--deposit"),
      cumulative: await units(flags.cumulative, "--cumulative"),
      quiet,
      token: await token().catch(() => undefined),
    });
    return {
      body: requestBody(flags.x402 ? "x402" : "reference", 2, signed.payload, batchRequirements),
      summary: `${signed.summary}, from ${payer.address} to ${payTo} on ${network}`,
    };
  }
  if (flags.approval && method !== "permit2") {
    throw new UsageError("--approval goes with --method permit2");
  }
  const approval = flags.approval ? await approvalTerms(await client(), payer.address) : undefined;
  const eip2612Nonce =
    method === "permit2" && !approval
      ? await eip2612For(payer, asset, amount, domain, await client(), quiet)
      : undefined;
  const payload = await signPayment(payer, {
    chainId,
    x402Version,
    requirements,
    amount,
    method,
    validForSeconds: maxTimeoutSeconds,
    eip2612Nonce,
    approval,
  });
  const body = requestBody(flags.x402 ? "x402" : "reference", x402Version, payload, requirements);
  return {
    body,
    summary: `${describeAmount(amount, asset, await token().catch(() => undefined))} from ${payer.address} to ${payTo} on ${network} (${method}${eip2612Nonce !== undefined ? " + eip2612GasSponsoring" : ""}${approval ? " + erc20ApprovalGasSponsoring" : ""})`,
  };
}

export async function runPay(flags: PayFlags): Promise<number> {
  const out = humanOutput(flags.quiet);
  const config = loadConfig(flags);
  const rpc = new RpcRegistry(registryOptions(config));
  try {
    const action = channelActionOf(flags);
    const { body, line } = action
      ? await buildChannelRequest(action, flags, rpc)
      : await buildRequest(flags, rpc).then((r) => ({ ...r, line: `signed ${r.summary}` }));
    await printJson(body);
    note(out, line);
    return 0;
  } catch (error) {
    // The chain could not be asked what the payment needs: a JSON answer, as verify gives.
    if (!(error instanceof FacilitatorError) && !isUnreachable(error)) throw error;
    const failure = failureOfThrown(error, "verify");
    await printJson({ success: false, error: failure.code, message: failure.message });
    if (!flags.quiet) warn(`${failure.code}: ${failure.message}`);
    return failure.code === "chain_unavailable" ? 3 : 2;
  }
}
