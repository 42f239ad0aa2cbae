/**
 * Hand-made EIP-3009 authorizations, for the cases the official client will not produce (a
 * validAfter in the future, a signer that is not `from`, a contract wallet's owner signing).
 */
import {
  type Address,
  bytesToHex,
  createTestClient,
  createWalletClient,
  type Hex,
  http,
  parseSignature,
  size,
  sliceHex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { testUsdcAbi } from "../../src/evm/devnet/artifacts.js";
import type { DevAccount, Devnet } from "../../src/evm/devnet/index.js";
import { transferWithAuthorizationTypedData } from "../../src/evm/exact/eip3009-encoding.js";

export interface AuthorizationFields {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

export function randomNonce(): Hex {
  return bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
}

export async function signAuthorization(
  devnet: Devnet,
  signerKey: Hex,
  fields: AuthorizationFields,
  domain: { name?: string; version?: string; verifyingContract?: Address } = {},
): Promise<Hex> {
  return privateKeyToAccount(signerKey).signTypedData(
    transferWithAuthorizationTypedData(
      {
        name: domain.name ?? devnet.token.name,
        version: domain.version ?? devnet.token.version,
        chainId: devnet.chainId,
        verifyingContract: domain.verifyingContract ?? devnet.token.address,
      },
      fields,
    ),
  );
}

/** The wire form of an authorization: every number as a decimal string. */
export function wireAuthorization(fields: AuthorizationFields) {
  return {
    from: fields.from,
    to: fields.to,
    value: fields.value.toString(),
    validAfter: fields.validAfter.toString(),
    validBefore: fields.validBefore.toString(),
    nonce: fields.nonce,
  };
}

const CURVE_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

/** The same signature with s mirrored to the high half: still recovers, USDC refuses it. */
export function highS(signature: Hex): Hex {
  if (size(signature) !== 65) throw new Error("expected a 65-byte signature");
  const r = sliceHex(signature, 0, 32);
  const s = BigInt(sliceHex(signature, 32, 64));
  const v = Number.parseInt(signature.slice(-2), 16);
  const flippedS = (CURVE_ORDER - s).toString(16).padStart(64, "0");
  const flippedV = (v === 27 ? 28 : 27).toString(16);
  return `${r}${flippedS}${flippedV}` as Hex;
}

/** The same signature with v written as 0/1 instead of 27/28. */
export function zeroOneV(signature: Hex): Hex {
  const v = Number.parseInt(signature.slice(-2), 16);
  return `${signature.slice(0, -2)}${(v - 27).toString(16).padStart(2, "0")}` as Hex;
}

/** The payer's signature cancelling its authorization `nonce` (EIP-3009 cancelAuthorization). */
export function signCancelAuthorization(devnet: Devnet, payerKey: Hex, nonce: Hex): Promise<Hex> {
  const account = privateKeyToAccount(payerKey);
  return account.signTypedData({
    domain: {
      name: devnet.token.name,
      version: devnet.token.version,
      chainId: devnet.chainId,
      verifyingContract: devnet.token.address,
    },
    types: {
      CancelAuthorization: [
        { name: "authorizer", type: "address" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "CancelAuthorization",
    message: { authorizer: account.address, nonce },
  });
}

/**
 * The payer cancels its authorization `nonce` with a far higher tip than ours, so the cancel is
 * mined ahead of our settlement (which then reverts); then one block is mined (manual mining).
 */
export async function cancelAhead(devnet: Devnet, payer: DevAccount, nonce: Hex): Promise<void> {
  const account = privateKeyToAccount(payer.privateKey);
  const signature = await signCancelAuthorization(devnet, payer.privateKey, nonce);
  const { v, r, s } = parseSignature(signature);
  await createWalletClient({ account, transport: http(devnet.rpcUrl) }).writeContract({
    address: devnet.token.address,
    abi: testUsdcAbi,
    functionName: "cancelAuthorization",
    args: [account.address, nonce, Number(v), r, s],
    maxPriorityFeePerGas: 100_000_000_000n,
    maxFeePerGas: 200_000_000_000n,
    gas: 100_000n,
    chain: null,
  });
  await createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).mine({ blocks: 1 });
}
