/** The EVM files `facilitator devnet` writes: the settlement key and the signed requests. */
import { randomBytes } from "node:crypto";
import { chmod, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Hex } from "viem";
import { MIN_WITHDRAW_DELAY } from "../../../evm/batch-settlement/constants.js";
import {
  batchPaymentPayload,
  signBatchDeposit,
  signBatchVoucherPayload,
} from "../../../evm/client/sign-batch.js";
import { type RequirementsJson, requestBody } from "../../../evm/client/sign-payment.js";
import { receiverAuthorizerAccount } from "../../../evm/devnet/accounts.js";
import {
  approvePermit2,
  type DevAccount,
  type Devnet,
  type DevnetInfo,
} from "../../../evm/devnet/index.js";
import { signSampleRequest } from "../../../evm/devnet/sample.js";
import { signPermitRequest } from "../../../evm/devnet/sign-permit.js";
import { signUptoRequest } from "../../../evm/devnet/sign-upto.js";
import type { SvmDevnet } from "../../../svm/devnet/index.js";

/** The price of one request in the devnet's batch-settlement requests: 0.01 test USDC. */
const BATCH_PRICE = 10_000n;

/** The devnet's batch-settlement requirements: test USDC to the payee, our authorizer. */
export function devnetBatchRequirements(
  devnet: DevnetInfo,
  amount = BATCH_PRICE,
): RequirementsJson {
  return {
    scheme: "batch-settlement",
    network: devnet.network,
    amount: amount.toString(),
    asset: devnet.token.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: {
      receiverAuthorizer: receiverAuthorizerAccount.address,
      withdrawDelay: MIN_WITHDRAW_DELAY,
      name: devnet.token.name,
      version: devnet.token.version,
    },
  };
}

/** Payer 2 opens its channel with a deposit (5 requests' worth), then a voucher for the next. */
async function signBatchRequests(devnet: DevnetInfo, payer: DevAccount) {
  const requirements = devnetBatchRequirements(devnet);
  const deposit = await signBatchDeposit(payer, {
    chainId: devnet.chainId,
    requirements,
    deposit: 5n * BATCH_PRICE,
    method: "eip3009",
    validForSeconds: 24 * 3600,
  });
  const voucher = await signBatchVoucherPayload(
    payer,
    devnet.chainId,
    requirements,
    2n * BATCH_PRICE,
  );
  const body = (payload: unknown) =>
    requestBody("x402", 2, batchPaymentPayload(requirements, payload), requirements);
  return { deposit: body(deposit), voucher: body(voucher) };
}

export interface EvmFiles {
  readonly keyFile: string;
  readonly receiverAuthorizerKeyFile: string;
  readonly apiKeysFile: string;
  readonly request: string;
  readonly requestX402: string;
  readonly requestV1?: string | undefined;
  readonly requestPermit2: string;
  readonly requestPermit2Eip2612: string;
  readonly requestPermit: string;
  readonly requestPermit2Approval: string;
  readonly requestUpto: string;
  readonly requestBatchDeposit: string;
  readonly requestBatchVoucher: string;
}

export async function writeEvmFiles(devnet: Devnet, dir: string): Promise<EvmFiles> {
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  const put = async (name: string, text: string, mode?: number) => {
    const file = path.join(dir, name);
    await writeFile(file, text, { mode });
    // Keys go to files only their owner can read; they are never printed.
    if (mode !== undefined) await chmod(file, mode);
    return file;
  };
  const keyFile = await put("facilitator.key", `${devnet.facilitator.privateKey}\n`, 0o600);
  const receiverAuthorizerKey = `${receiverAuthorizerAccount.privateKey}\n`;
  const receiverAuthorizerKeyFile = await put(
    "receiver-authorizer.key",
    receiverAuthorizerKey,
    0o600,
  );
  // The seller's key may ask for refunds our receiver authorizer signs, so /supported offers it.
  const sellerKey = `devnet-seller-${randomBytes(16).toString("hex")}`;
  const apiKeysFile = await put(
    "api-keys.json",
    json({
      anonymous: true,
      keys: [{ name: "devnet seller", key: sellerKey, receivers: [devnet.payee.address] }],
    }),
    0o600,
  );
  const [payer1, payer2, payer3, payer4, payer5] = devnet.payers;
  if (!payer1 || !payer2 || !payer3 || !payer4 || !payer5) {
    throw new Error("the devnet has fewer than five payers");
  }
  const sample = async (name: string, options: Parameters<typeof signSampleRequest>[1]) =>
    put(name, json(await signSampleRequest(devnet, options)));
  const request = await sample("request.json", { payer: payer1 });
  const requestX402 = await sample("request-x402.json", { payer: payer2, dialect: "x402" });
  const requestV1 = devnet.v1Network
    ? await sample("request-v1.json", { payer: payer3, x402Version: 1 })
    : undefined;
  // Payer 4 has approved Permit2 on the permit token; payer 5's request carries an EIP-2612 permit.
  await approvePermit2(devnet, payer4, devnet.permitToken.address);
  const permit2 = { method: "permit2", asset: "permit" } as const;
  const requestPermit2 = await sample("request-permit2.json", { payer: payer4, ...permit2 });
  const requestPermit2Eip2612 = await sample("request-permit2-eip2612.json", {
    payer: payer5,
    ...permit2,
    eip2612GasSponsoring: true,
  });
  const requestUpto = await put("request-upto.json", json(await signUptoRequest(devnet, payer4)));
  const requestPermit = await put(
    "request-permit.json",
    json(await signPermitRequest(devnet, payer3)),
  );
  // Payer 1 sends no transaction of its own, so its signed approval's nonce stays next.
  const requestPermit2Approval = await sample("request-permit2-approval.json", {
    payer: payer1,
    method: "permit2",
    asset: "plain",
    erc20ApprovalGasSponsoring: true,
  });
  const batch = await signBatchRequests(devnet, payer2);
  return {
    keyFile,
    receiverAuthorizerKeyFile,
    apiKeysFile,
    request,
    requestX402,
    requestV1,
    requestPermit2,
    requestPermit2Eip2612,
    requestPermit,
    requestPermit2Approval,
    requestUpto,
    requestBatchDeposit: await put("request-batch-deposit.json", json(batch.deposit)),
    requestBatchVoucher: await put("request-batch-voucher.json", json(batch.voucher)),
  };
}

/** The signed request files alone, in --json's order. */
export function requestFiles(files: EvmFiles) {
  const { keyFile: _k, receiverAuthorizerKeyFile: _r, apiKeysFile: _a, ...requests } = files;
  return requests;
}

/** devnet.json's EVM part: every address, and the chain's genesis block hash. */
export function evmInfo(devnet: Devnet, files: EvmFiles, genesisHash: Hex) {
  return {
    rpcUrl: devnet.rpcUrl,
    chainId: devnet.chainId,
    genesisHash,
    network: devnet.network,
    v1Network: devnet.v1Network,
    token: devnet.token,
    permitToken: devnet.permitToken,
    plainToken: devnet.plainToken,
    multicall3: devnet.multicall3,
    permit2: devnet.permit2,
    exactPermit2Proxy: devnet.exactPermit2Proxy,
    uptoPermit2Proxy: devnet.uptoPermit2Proxy,
    batchSettlement: devnet.batchSettlement,
    walletFactory: devnet.walletFactory,
    facilitator: devnet.facilitator.address,
    payers: devnet.payers.map((p) => p.address),
    payee: devnet.payee.address,
    keyFile: files.keyFile,
    receiverAuthorizer: receiverAuthorizerAccount.address,
    receiverAuthorizerKeyFile: files.receiverAuthorizerKeyFile,
    apiKeysFile: files.apiKeysFile,
    requests: {
      reference: files.request,
      x402: files.requestX402,
      v1: files.requestV1,
      permit2: files.requestPermit2,
      permit2Eip2612: files.requestPermit2Eip2612,
      permit: files.requestPermit,
      permit2Approval: files.requestPermit2Approval,
      upto: files.requestUpto,
      batchDeposit: files.requestBatchDeposit,
      batchVoucher: files.requestBatchVoucher,
    },
  };
}

export interface SvmFiles {
  readonly keyFile: string;
  readonly request: string;
  stop(): void;
}

/** What a devnet wrote: its directory, journal and env file, and each cluster's files. */
export interface Files {
  readonly dir: string;
  readonly journal: string;
  readonly envFile: string;
  /** anvil's genesis block hash: what tells this devnet from the next one. */
  readonly genesisHash?: Hex | undefined;
  readonly evm?: EvmFiles | undefined;
  readonly svm?: SvmFiles | undefined;
}

export interface Running {
  devnet?: Devnet | undefined;
  taken?: number | undefined;
  svm?: SvmDevnet | undefined;
  svmTaken?: number | undefined;
}
