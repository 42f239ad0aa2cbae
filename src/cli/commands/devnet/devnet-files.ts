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
function devnetBatchRequirements(devnet: DevnetInfo): RequirementsJson {
  return {
    scheme: "batch-settlement",
    network: devnet.network,
    amount: BATCH_PRICE.toString(),
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

/** The signed requests by --json's key, with the banner's note for each. */
export const REQUEST_NOTES = {
  request: "",
  requestX402: "(x402 dialect)",
  requestV1: "(x402 v1)",
  requestPermit2: "(Permit2; payer 4 approved Permit2)",
  requestPermit2Eip2612: "(Permit2 + eip2612GasSponsoring)",
  requestPermit: "(EIP-2612 permit, x402x shape)",
  requestPermit2Approval: "(Permit2 + erc20ApprovalGasSponsoring)",
  requestUpto: "(upto: settle --amount N charges N of at most 50000)",
  requestBatchDeposit: "(batch-settlement: payer 2 deposits 50000 into its channel)",
  requestBatchVoucher:
    "(batch-settlement voucher, 20000 cumulative: verify it once the deposit has settled)",
} as const;

type RequestKey = keyof typeof REQUEST_NOTES;
export const REQUEST_KEYS = Object.keys(REQUEST_NOTES) as RequestKey[];

/** Its file: request-permit2-eip2612.json for requestPermit2Eip2612. */
export const requestFileName = (key: RequestKey) =>
  `${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}.json`;

/** Its name in devnet.json's `requests`: permit2Eip2612 for requestPermit2Eip2612. */
const infoName = (key: RequestKey) =>
  key === "request" ? "reference" : `${key.charAt(7).toLowerCase()}${key.slice(8)}`;

/** JSON as the devnet's files hold it: indented, a newline last. */
export const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** Writes `dir/name`; keys (`mode` 0600) go to files only their owner can read, never printed. */
export async function putFile(dir: string, name: string, text: string, mode?: number) {
  const file = path.join(dir, name);
  await writeFile(file, text, { mode });
  if (mode !== undefined) await chmod(file, mode);
  return file;
}

export type EvmFiles = {
  readonly keyFile: string;
  readonly receiverAuthorizerKeyFile: string;
  readonly apiKeysFile: string;
} & { readonly [key in RequestKey]?: string };

export async function writeEvmFiles(devnet: Devnet, dir: string): Promise<EvmFiles> {
  const put = (name: string, text: string, mode?: number) => putFile(dir, name, text, mode);
  const putKey = (name: string, key: Hex) => put(name, `${key}\n`, 0o600);
  const keyFile = await putKey("facilitator.key", devnet.facilitator.privateKey);
  const authorizerKey = receiverAuthorizerAccount.privateKey;
  const receiverAuthorizerKeyFile = await putKey("receiver-authorizer.key", authorizerKey);
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
  const sample = (options: Parameters<typeof signSampleRequest>[1]) =>
    signSampleRequest(devnet, options);
  // Payer 4 has approved Permit2 on the permit token; payer 5's request carries an EIP-2612 permit.
  await approvePermit2(devnet, payer4, devnet.permitToken.address);
  const permit2 = { method: "permit2", asset: "permit" } as const;
  const batch = await signBatchRequests(devnet, payer2);
  const signed: Record<RequestKey, unknown> = {
    request: await sample({ payer: payer1 }),
    requestX402: await sample({ payer: payer2, dialect: "x402" }),
    requestV1: devnet.v1Network ? await sample({ payer: payer3, x402Version: 1 }) : undefined,
    requestPermit2: await sample({ payer: payer4, ...permit2 }),
    requestPermit2Eip2612: await sample({ payer: payer5, ...permit2, eip2612GasSponsoring: true }),
    requestPermit: await signPermitRequest(devnet, payer3),
    // Payer 1 sends no transaction of its own, so its signed approval's nonce stays next.
    requestPermit2Approval: await sample({
      payer: payer1,
      method: "permit2",
      asset: "plain",
      erc20ApprovalGasSponsoring: true,
    }),
    requestUpto: await signUptoRequest(devnet, payer4),
    requestBatchDeposit: batch.deposit,
    requestBatchVoucher: batch.voucher,
  };
  const files: Partial<Record<RequestKey, string>> = {};
  for (const key of REQUEST_KEYS) {
    if (signed[key] !== undefined) files[key] = await put(requestFileName(key), json(signed[key]));
  }
  return { keyFile, receiverAuthorizerKeyFile, apiKeysFile, ...files };
}

export function requestFiles(files: EvmFiles) {
  const { keyFile: _k, receiverAuthorizerKeyFile: _r, apiKeysFile: _a, ...requests } = files;
  return requests;
}

/** devnet.json's EVM part: every address, and the chain's genesis block hash. */
export function evmInfo(devnet: Devnet, files: EvmFiles, genesisHash: Hex) {
  // The network, its tokens and its contracts, in devnet order; of the accounts, the addresses.
  const { rpcUrl, chainId, anvil: _a, stop: _s, facilitator, payers, payee, ...chain } = devnet;
  return {
    rpcUrl,
    chainId,
    genesisHash,
    ...chain,
    facilitator: facilitator.address,
    payers: payers.map((p) => p.address),
    payee: payee.address,
    keyFile: files.keyFile,
    receiverAuthorizer: receiverAuthorizerAccount.address,
    receiverAuthorizerKeyFile: files.receiverAuthorizerKeyFile,
    apiKeysFile: files.apiKeysFile,
    requests: Object.fromEntries(REQUEST_KEYS.map((key) => [infoName(key), files[key]])),
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
