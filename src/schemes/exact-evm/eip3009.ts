/**
 * `exact` on EVM through EIP-3009 `transferWithAuthorization` (USDC and alike), x402 v1 and v2.
 * Checks run in the reference SDK's order so the first failure reported is the one it reports.
 */
import {
  type Address,
  concatHex,
  encodeAbiParameters,
  encodeFunctionData,
  type Hex,
  hexToNumber,
  isAddressEqual,
  isErc6492Signature,
  keccak256,
  parseAbi,
  parseErc6492Signature,
  size,
  sliceHex,
  toHex,
  zeroAddress,
} from "viem";
import { z } from "zod";
import type { ExpectedTransfer, JournalEntry } from "../../chain/journal.js";
import { revertReason } from "../../chain/revert.js";
import { isUnreachable } from "../../chain/rpc.js";
import { recoverSigner } from "../../chain/secp256k1.js";
import {
  type CallOutcome,
  executeCall,
  hasGasEstimate,
  receiptHasTransfer,
  reconcile,
} from "../../chain/transactions.js";
import { type Failure, failure } from "../../errors.js";
import { invalidField, type PaymentRequest } from "../../protocol/request.js";
import { describeIssue, type WaitUntil } from "../../protocol/schemas.js";
import type { PaymentMethod, SchemeContext, SettleResult, VerifyResult } from "../types.js";
import { address, bytes32, hexBytes, uint256 } from "./fields.js";
import { type EvmRequirements, eip712Domain, parseEvmRequirements } from "./requirements.js";

export const eip3009Abi = parseAbi([
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function balanceOf(address account) view returns (uint256)",
  "function name() view returns (string)",
  "function version() view returns (string)",
  "function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
]);

/** EIP-712 types of an EIP-3009 transfer authorization. */
export const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

export interface TokenDomain {
  readonly name: string;
  readonly version: string;
  readonly chainId: number;
  readonly verifyingContract: Address;
}

export interface AuthorizationMessage {
  readonly from: Address;
  readonly to: Address;
  readonly value: bigint;
  readonly validAfter: bigint;
  readonly validBefore: bigint;
  readonly nonce: Hex;
}

const TRANSFER_WITH_AUTHORIZATION_TYPEHASH =
  "0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267";
/** keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)") */
const EIP712_DOMAIN_TYPEHASH = "0x8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f";
const domainSeparators = new Map<string, Hex>();

/**
 * The EIP-712 digest of an authorization: what `hashTypedData` computes, with the token's domain
 * separator computed once per (token, chain, name, version) instead of on every verify.
 */
export function authorizationDigest(domain: TokenDomain, message: AuthorizationMessage): Hex {
  const key = `${domain.chainId}:${domain.verifyingContract}:${domain.name}:${domain.version}`;
  let separator = domainSeparators.get(key);
  if (!separator) {
    separator = keccak256(
      encodeAbiParameters(
        [
          { type: "bytes32" },
          { type: "bytes32" },
          { type: "bytes32" },
          { type: "uint256" },
          { type: "address" },
        ],
        [
          EIP712_DOMAIN_TYPEHASH,
          keccak256(toHex(domain.name)),
          keccak256(toHex(domain.version)),
          BigInt(domain.chainId),
          domain.verifyingContract,
        ],
      ),
    );
    if (domainSeparators.size > 1024) domainSeparators.clear();
    domainSeparators.set(key, separator);
  }
  const structHash = keccak256(
    encodeAbiParameters(
      [
        { type: "bytes32" },
        { type: "address" },
        { type: "address" },
        { type: "uint256" },
        { type: "uint256" },
        { type: "uint256" },
        { type: "bytes32" },
      ],
      [
        TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
        message.from,
        message.to,
        message.value,
        message.validAfter,
        message.validBefore,
        message.nonce,
      ],
    ),
  );
  return keccak256(concatHex(["0x1901", separator, structHash]));
}

/** The typed data a payer signs (and we recover from) for one authorization. */
export function transferWithAuthorizationTypedData(
  domain: TokenDomain,
  message: AuthorizationMessage,
) {
  return {
    domain,
    types: transferWithAuthorizationTypes,
    primaryType: "TransferWithAuthorization",
    message,
  } as const;
}

const ERC1271_MAGIC = "0x1626ba7e";
/** transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32) */
const TRANSFER_VRS_SELECTOR = "0xe3ee160e";
/** The reference refuses authorizations that expire within this many seconds. */
const VALID_BEFORE_HEADROOM_SECONDS = 6n;
/** secp256k1 n / 2: signatures with a larger s are rejected on chain by USDC. */
const HALF_CURVE_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

const payloadSchema = z.object({
  signature: hexBytes,
  authorization: z.object({
    from: address,
    to: address,
    value: uint256,
    validAfter: uint256,
    validBefore: uint256,
    nonce: bytes32,
  }),
});

type Authorization = z.infer<typeof payloadSchema>["authorization"];

interface Checked {
  readonly authorization: Authorization;
  readonly signature: Hex;
  readonly requirements: EvmRequirements;
  readonly domain: { name: string; version: string };
  /** Known after verification: the payer is a contract (or EIP-7702) account. */
  readonly payerHasCode?: boolean;
}

type Step<T> = { ok: true; value: T } | { ok: false; failure: Failure };

/** The asset-has-code answer is cached: deployed code does not go away. */
const contractAssets = new Map<string, number>();
const ASSET_CACHE_MS = 15 * 60_000;
const ASSET_CACHE_MAX = 4096;

/** Never rejects: lets a check start early and be read later, or not at all. */
function settle<T>(
  promise: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

function chainFailure(error: unknown, doing: string): Failure {
  if (isUnreachable(error)) {
    return failure("chain_unavailable", `${doing}: the RPC could not be reached`);
  }
  const text = error instanceof Error ? error.message.split("\n")[0] : String(error);
  return failure("internal_error", `${doing}: ${text}`);
}

function parse(request: PaymentRequest): Step<Checked> {
  const payload = payloadSchema.safeParse(request.payload);
  if (!payload.success) {
    const prefix = `${request.paths.payload}.payload`;
    return { ok: false, failure: invalidField(describeIssue(payload.error, prefix), prefix) };
  }
  const requirements = parseEvmRequirements(request);
  if (!requirements.ok) return requirements;
  return {
    ok: true,
    value: {
      authorization: payload.data.authorization,
      signature: payload.data.signature,
      requirements: requirements.value,
      domain: { name: "", version: "" },
    },
  };
}

function typedData(ctx: SchemeContext, checked: Checked) {
  return transferWithAuthorizationTypedData(
    {
      name: checked.domain.name,
      version: checked.domain.version,
      chainId: ctx.chainId,
      verifyingContract: checked.requirements.asset,
    },
    checked.authorization,
  );
}

function digestOf(ctx: SchemeContext, checked: Checked): Hex {
  const { domain, message } = typedData(ctx, checked);
  return authorizationDigest(domain, message);
}

/** The call that moves the money: the (v,r,s) overload for 65-byte signatures, else `bytes`. */
export function transferCalldata(authorization: Authorization, signature: Hex): Hex {
  const { from, to, value, validAfter, validBefore, nonce } = authorization;
  if (size(signature) === 65) {
    // Nine static words after the selector: written directly, as this runs on every verify.
    // v goes through as signed (27/28, or 0/1 which USDC rejects), as the reference sends it.
    const word = (hex: string) => hex.padStart(64, "0");
    return `${TRANSFER_VRS_SELECTOR}${[
      word(from.slice(2).toLowerCase()),
      word(to.slice(2).toLowerCase()),
      word(value.toString(16)),
      word(validAfter.toString(16)),
      word(validBefore.toString(16)),
      nonce.slice(2),
      word(signature.slice(130, 132)),
      signature.slice(2, 66),
      signature.slice(66, 130),
    ].join("")}` as Hex;
  }
  return encodeFunctionData({
    abi: eip3009Abi,
    functionName: "transferWithAuthorization",
    args: [from, to, value, validAfter, validBefore, nonce, signature],
  });
}

/** True for a 65-byte signature USDC would refuse even though it recovers off chain. */
function isMalleable(signature: Hex): boolean {
  if (size(signature) !== 65) return false;
  const s = BigInt(sliceHex(signature, 32, 64));
  const v = hexToNumber(sliceHex(signature, 64, 65));
  return s > HALF_CURVE_ORDER || (v !== 27 && v !== 28);
}

async function assetIsContract(ctx: SchemeContext, asset: Address): Promise<boolean> {
  const key = `${ctx.chainId}:${asset}`;
  const cachedAt = contractAssets.get(key);
  if (cachedAt !== undefined && Date.now() - cachedAt < ASSET_CACHE_MS) return true;
  const code = await ctx.client.getCode({ address: asset });
  const isContract = code !== undefined && code !== "0x";
  if (isContract) {
    if (contractAssets.size >= ASSET_CACHE_MAX) contractAssets.clear();
    contractAssets.set(key, Date.now());
  }
  return isContract;
}

async function checkSignature(
  ctx: SchemeContext,
  checked: Checked,
  payerCode: Promise<Hex | undefined>,
): Promise<Step<null>> {
  const { authorization } = checked;
  let signature = checked.signature;
  const invalid = (why: string): Step<null> => ({
    ok: false,
    failure: failure("invalid_signature", `the signature ${why}`),
  });

  let code: Hex | undefined;
  try {
    code = await payerCode;
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "reading the payer's code") };
  }
  const payerHasCode = code !== undefined && code !== "0x";

  if (isErc6492Signature(signature)) {
    const wrapped = parseErc6492Signature(signature);
    if (!payerHasCode && wrapped.address && !isAddressEqual(wrapped.address, zeroAddress)) {
      return {
        ok: false,
        failure: failure(
          "unsupported_signature",
          "ERC-6492 signatures of undeployed wallets are not supported: no wallet factory is allowed",
        ),
      };
    }
    signature = wrapped.signature;
  }

  if (payerHasCode) {
    // A contract wallet (or an EIP-7702 account): only its EIP-1271 answer counts.
    try {
      const answer = await ctx.client.readContract({
        address: authorization.from,
        abi: eip3009Abi,
        functionName: "isValidSignature",
        args: [digestOf(ctx, checked), signature],
      });
      return answer === ERC1271_MAGIC
        ? { ok: true, value: null }
        : invalid("is refused by the payer's wallet contract (EIP-1271)");
    } catch (error) {
      if (isUnreachable(error))
        return { ok: false, failure: chainFailure(error, "asking the payer's wallet") };
      return invalid("is refused by the payer's wallet contract (EIP-1271)");
    }
  }

  if (size(signature) !== 65) {
    return invalid(`must be 65 bytes for an account without code; got ${size(signature)}`);
  }
  let signer: Address | undefined;
  try {
    signer = await recoverSigner(ctx.client, digestOf(ctx, checked), signature);
  } catch (error) {
    return { ok: false, failure: chainFailure(error, "recovering the signer") };
  }
  if (!signer) return invalid("cannot be recovered");
  return isAddressEqual(signer, authorization.from)
    ? { ok: true, value: null }
    : invalid(`recovers to ${signer}, not to the payer ${authorization.from}`);
}

/** The checks that need no chain, in the reference's order after the signature. */
function checkTerms(ctx: SchemeContext, request: PaymentRequest, checked: Checked): Failure | null {
  const { authorization: auth, requirements } = checked;
  const now = BigInt(Math.floor(ctx.now()));
  if (!isAddressEqual(auth.to, requirements.payTo)) {
    return failure(
      "recipient_mismatch",
      `the authorization pays ${auth.to}, requirements.payTo is ${requirements.payTo}`,
    );
  }
  if (auth.validBefore < now + VALID_BEFORE_HEADROOM_SECONDS) {
    return failure(
      "authorization_expired",
      `validBefore ${auth.validBefore} is less than ${VALID_BEFORE_HEADROOM_SECONDS} s after now (${now})`,
    );
  }
  if (auth.validAfter > now) {
    return failure(
      "authorization_not_yet_valid",
      `validAfter ${auth.validAfter} is after now (${now})`,
    );
  }
  if (auth.value !== requirements.amount) {
    return failure(
      "amount_mismatch",
      `the authorization is for ${auth.value}, the requirements ask for exactly ${requirements.amount}`,
      request.x402Version === 1 ? { x402Reason: "invalid_exact_evm_authorization_value" } : {},
    );
  }
  return null;
}

/**
 * Why a transfer would revert (or did): reads the token's view of the authorization, its domain and
 * the balance, and names the first cause in the reference's order.
 */
async function diagnose(
  ctx: SchemeContext,
  checked: Checked,
  revert: string | undefined,
): Promise<Failure> {
  const { authorization: auth, requirements, domain } = checked;
  const token = { address: requirements.asset, abi: eip3009Abi } as const;
  const [used, name, version, balance] = await Promise.all([
    settle(
      ctx.client.readContract({
        ...token,
        functionName: "authorizationState",
        args: [auth.from, auth.nonce],
      }),
    ),
    settle(ctx.client.readContract({ ...token, functionName: "name" })),
    settle(ctx.client.readContract({ ...token, functionName: "version" })),
    settle(ctx.client.readContract({ ...token, functionName: "balanceOf", args: [auth.from] })),
  ]);
  const unreachable = [used, name, version, balance].find((r) => !r.ok && isUnreachable(r.error));
  if (unreachable && !unreachable.ok)
    return chainFailure(unreachable.error, "diagnosing the failed simulation");
  const detail = revert ? `: ${revert}` : "";

  if (!used.ok)
    return failure("eip3009_not_supported", `the token has no authorizationState()${detail}`);
  if (used.value)
    return failure(
      "nonce_already_used",
      `authorization nonce ${auth.nonce} was already used or cancelled`,
    );
  if (name.ok && name.value !== domain.name) {
    return failure(
      "token_name_mismatch",
      `the token's name() is "${name.value}", requirements.extra.name is "${domain.name}"`,
    );
  }
  if (version.ok && version.value !== domain.version) {
    return failure(
      "token_version_mismatch",
      `the token's version() is "${version.value}", requirements.extra.version is "${domain.version}"`,
    );
  }
  if (balance.ok && balance.value < auth.value) {
    return failure(
      "insufficient_funds",
      `the payer holds ${balance.value}, the payment needs ${auth.value}`,
    );
  }
  if (isMalleable(checked.signature)) {
    // Recovers off chain, refused by USDC on chain; the reference reports a failed simulation.
    return failure(
      "invalid_signature",
      `the signature is not in canonical form (low s, v of 27 or 28)${detail}`,
      {
        x402Reason: "invalid_exact_evm_transaction_simulation_failed",
      },
    );
  }
  return failure("simulation_failed", `the transfer would revert${detail}`);
}

async function verifyChecked(
  ctx: SchemeContext,
  request: PaymentRequest,
  options: { simulate: boolean },
  parsed: Step<Checked> = parse(request),
): Promise<Step<Checked>> {
  if (!parsed.ok) return parsed;

  if (request.payloadScheme !== request.requirements.scheme) {
    return {
      ok: false,
      failure: failure(
        "scheme_mismatch",
        `the payload's scheme "${request.payloadScheme}" differs from the requirements' "${request.requirements.scheme}"`,
      ),
    };
  }
  const domain = eip712Domain(request);
  if (!domain.ok) return domain;
  if (request.payloadNetwork !== request.requirements.network) {
    return {
      ok: false,
      failure: failure(
        "network_mismatch",
        `the payload's network "${request.payloadNetwork}" differs from the requirements' "${request.requirements.network}"`,
      ),
    };
  }
  const checked: Checked = {
    ...parsed.value,
    domain: { name: domain.name, version: domain.version },
  };
  const { authorization: auth, requirements } = checked;

  // Start the chain reads together (one batched round trip), then judge in the reference's order.
  const payerCode = ctx.client.getCode({ address: auth.from });
  payerCode.catch(() => undefined);
  const termsFailure = checkTerms(ctx, request, checked);
  const assetCheck = termsFailure ? undefined : settle(assetIsContract(ctx, requirements.asset));
  const simulation =
    termsFailure || !options.simulate
      ? undefined
      : settle(
          ctx.client.call({
            to: requirements.asset,
            data: transferCalldata(auth, checked.signature),
          }),
        );

  const signature = await checkSignature(ctx, checked, payerCode);
  if (!signature.ok) return signature;
  if (termsFailure) return { ok: false, failure: termsFailure };

  const asset = await assetCheck;
  if (asset && !asset.ok)
    return { ok: false, failure: chainFailure(asset.error, "reading the asset's code") };
  if (asset && !asset.value) {
    return {
      ok: false,
      failure: failure(
        "asset_not_contract",
        `no contract at ${requirements.asset} on chain ${ctx.chainId}`,
      ),
    };
  }

  const simulated = await simulation;
  if (simulated && !simulated.ok) {
    if (isUnreachable(simulated.error)) {
      return { ok: false, failure: chainFailure(simulated.error, "simulating the transfer") };
    }
    return { ok: false, failure: await diagnose(ctx, checked, revertReason(simulated.error)) };
  }
  const code = await payerCode.catch(() => undefined);
  return { ok: true, value: { ...checked, payerHasCode: code !== undefined && code !== "0x" } };
}

/** The journal's name for an authorization: the token spends each (from, nonce) once. */
function settlementKey(ctx: SchemeContext, checked: Checked): string {
  const { authorization: auth, requirements } = checked;
  return `eip3009:${ctx.chainId}:${requirements.asset}:${auth.from}:${auth.nonce}`.toLowerCase();
}

function expectedTransfer(checked: Checked): ExpectedTransfer {
  const { authorization: auth, requirements } = checked;
  return { token: requirements.asset, from: auth.from, to: auth.to, value: auth.value.toString() };
}

/** A retried payload may only pick up a journaled settlement if it asks for exactly that payment. */
async function matchesJournal(
  ctx: SchemeContext,
  checked: Checked,
  entry: JournalEntry,
): Promise<Failure | null> {
  const expect = expectedTransfer(checked);
  const same =
    isAddressEqual(expect.to, entry.expect.to) &&
    expect.value === entry.expect.value &&
    isAddressEqual(checked.requirements.payTo, expect.to) &&
    checked.requirements.amount === checked.authorization.value;
  if (!same) {
    return failure(
      "nonce_already_used",
      `this authorization nonce is already being settled for another payment (${entry.hashes.at(-1)})`,
    );
  }
  if (size(checked.signature) === 65) {
    let signer: Address | undefined;
    try {
      signer = await recoverSigner(ctx.client, digestOf(ctx, checked), checked.signature);
    } catch (error) {
      return chainFailure(error, "recovering the signer");
    }
    if (!signer || !isAddressEqual(signer, checked.authorization.from)) {
      return failure("invalid_signature", "the signature does not recover to the payer");
    }
  }
  return null;
}

async function answer(
  ctx: SchemeContext,
  checked: Checked,
  key: string,
  outcome: CallOutcome,
): Promise<SettleResult> {
  const from = checked.authorization.from;
  switch (outcome.kind) {
    case "simulated":
    case "submitted":
      return { ok: true, payer: from, transactionHash: outcome.hash };
    case "confirmed":
      if (!receiptHasTransfer(outcome.receipt, expectedTransfer(checked))) {
        void ctx.journal.recordState(key, "failed").catch(() => undefined);
        return {
          ok: false,
          payer: from,
          transactionHash: outcome.hash,
          failure: failure(
            "settlement_failed",
            "the transaction succeeded but emitted no matching Transfer event",
            {
              x402Reason: "invalid_exact_evm_transfer_event_mismatch",
            },
          ),
        };
      }
      // If this record cannot be written, still answer: losing the hash would be worse.
      await ctx.journal.recordState(key, "answered").catch(() => undefined);
      return { ok: true, payer: from, transactionHash: outcome.hash };
    case "would-revert":
      return {
        ok: false,
        payer: from,
        failure: await diagnose(ctx, checked, outcome.reason ?? outcome.detail),
      };
    case "reverted": {
      const cause = await diagnose(ctx, checked, undefined);
      return {
        ok: false,
        payer: from,
        transactionHash: outcome.hash,
        failure: failure(
          "settlement_failed",
          `the transaction reverted on chain (${cause.message})`,
        ),
      };
    }
    case "failed":
      return { ok: false, payer: from, transactionHash: outcome.hash, failure: outcome.failure };
  }
}

async function settleChecked(
  ctx: SchemeContext,
  request: PaymentRequest,
  waitUntil: WaitUntil,
): Promise<SettleResult> {
  const parsed = parse(request);
  if (!parsed.ok) return { ok: false, failure: parsed.failure };
  const domain = eip712Domain(request);
  const key = settlementKey(ctx, parsed.value);
  if (!ctx.journal.claim(key)) {
    return {
      ok: false,
      failure: failure(
        "settlement_in_progress",
        "this authorization is being settled right now; retry in a moment",
      ),
    };
  }
  try {
    const entry = ctx.journal.get(key);
    if (entry?.state === "answered") {
      return {
        ok: false,
        failure: failure(
          "nonce_already_used",
          `this authorization was already settled in ${entry.hashes.at(-1)}`,
        ),
      };
    }
    if (entry?.state === "broadcast" && waitUntil !== "simulated" && domain.ok) {
      const checked: Checked = {
        ...parsed.value,
        domain: { name: domain.name, version: domain.version },
      };
      const mismatch = await matchesJournal(ctx, checked, entry);
      if (mismatch) return { ok: false, failure: mismatch };
      // Settled before (timed out, or the process died): follow that transaction, never send anew.
      const picked = await reconcile(ctx, entry);
      if (picked !== "gone") return answer(ctx, checked, key, picked);
      await ctx.journal.recordState(key, "dropped").catch(() => undefined);
    }

    // Settlement re-verifies everything. The transfer itself is simulated either here (batched
    // with the other reads) or by estimating its gas: the first settle on a token estimates,
    // later ones from accounts without code reuse that estimate.
    const gasKey = `${ctx.chainId}:${parsed.value.requirements.asset}:${size(parsed.value.signature)}`;
    const reuseGas = hasGasEstimate(gasKey);
    const verified = await verifyChecked(ctx, request, { simulate: reuseGas }, parsed);
    if (!verified.ok) return { ok: false, failure: verified.failure };
    const checked = verified.value;
    const outcome = await executeCall(
      ctx,
      {
        to: checked.requirements.asset,
        data: transferCalldata(checked.authorization, checked.signature),
      },
      waitUntil,
      {
        key,
        expect: expectedTransfer(checked),
        // Contract wallets spend what their signature check costs: always estimate for them.
        gasKey: checked.payerHasCode ? undefined : gasKey,
      },
    );
    return await answer(ctx, checked, key, outcome);
  } finally {
    ctx.journal.release(key);
  }
}

export const eip3009: PaymentMethod = {
  name: "eip3009",
  accepts: (payload) => "authorization" in payload,
  async verify(ctx, request): Promise<VerifyResult> {
    const result = await verifyChecked(ctx, request, { simulate: true });
    return result.ok
      ? { ok: true, payer: result.value.authorization.from }
      : { ok: false, failure: result.failure };
  },
  settle: settleChecked,
};
