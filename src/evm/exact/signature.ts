/** Whether a signature over an EIP-712 digest is the payer's: ECDSA, EIP-1271 or ERC-6492. */
import {
  type Address,
  encodeFunctionData,
  type Hex,
  hexToNumber,
  isAddressEqual,
  isErc6492Signature,
  multicall3Abi,
  parseAbi,
  parseErc6492Signature,
  size,
  sliceHex,
  zeroAddress,
} from "viem";
import { type Failure, failure } from "../../protocol/errors.js";
import { isUnreachable } from "../../rpc/rpc.js";
import { recoverSigner } from "../chain/secp256k1.js";
import type { EvmContext } from "../context.js";
import { chainFailure, refuse, type SignedPayment, type Step } from "./checks.js";

const erc1271Abi = parseAbi([
  "function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)",
]);
const ERC1271_MAGIC = "0x1626ba7e";
/** secp256k1 n / 2: signatures with a larger s are rejected on chain by USDC. */
const HALF_CURVE_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/** True for a 65-byte signature a token would refuse even though it recovers off chain. */
export function isMalleable(signature: Hex): boolean {
  if (size(signature) !== 65) return false;
  const s = BigInt(sliceHex(signature, 32, 64));
  const v = hexToNumber(sliceHex(signature, 64, 65));
  return s > HALF_CURVE_ORDER || (v !== 27 && v !== 28);
}

const invalid = (why: string) => refuse(failure("invalid_signature", `the signature ${why}`));

/** A wallet that does not exist yet: its factory and the call that deploys it (ERC-6492). */
export interface Deployment {
  readonly factory: Address;
  readonly calldata: Hex;
}

/** A valid signature, and the wallet to deploy first when the payer is counterfactual. */
type Signed = { readonly deployment?: Deployment | undefined };

/** An undeployed wallet's ERC-6492 signature counts only with an allowed factory, checked by
 * deploying it in an eth_call. */
export async function checkSignature(
  ctx: EvmContext,
  payer: Address,
  digest: Hex,
  signed: Hex,
  payerCode: Promise<Hex | undefined>,
): Promise<Step<Signed>> {
  let signature = signed;
  // Recovered while the payer's code is read (one round trip); counts only if the payer has none.
  const recovered = size(signed) === 65 ? recoversTo(ctx, payer, digest, signed) : undefined;
  let code: Hex | undefined;
  try {
    code = await payerCode;
  } catch (error) {
    return refuse(chainFailure(error, "reading the payer's code"));
  }
  const payerHasCode = code !== undefined && code !== "0x";

  if (isErc6492Signature(signature)) {
    const wrapped = parseErc6492Signature(signature);
    if (!payerHasCode && wrapped.address && !isAddressEqual(wrapped.address, zeroAddress)) {
      const factory = wrapped.address;
      if (!ctx.erc6492Factories.some((allowed) => isAddressEqual(allowed, factory))) {
        const why = `the payer's wallet is not deployed and its factory ${factory} is not allowed (--erc6492-factory)`;
        return refuse(failure("unsupported_signature", why));
      }
      // Checked by deploying the wallet inside an eth_call.
      const deployment = { factory, calldata: wrapped.data ?? "0x" } as const;
      const valid = () =>
        ctx.client.verifyHash({ address: payer, hash: digest, signature: signed });
      return walletSays(valid, { deployment }, "payer's undeployed wallet", "(ERC-6492)");
    }
    signature = wrapped.signature;
  }

  if (payerHasCode) {
    // A contract wallet (or an EIP-7702 account): only its EIP-1271 answer counts.
    const call = { address: payer, abi: erc1271Abi, functionName: "isValidSignature" } as const;
    const answer = () => ctx.client.readContract({ ...call, args: [digest, signature] });
    const valid = async () => (await answer()) === ERC1271_MAGIC;
    return walletSays(valid, {}, "payer's wallet", "contract (EIP-1271)");
  }

  if (size(signature) !== 65) {
    return invalid(`must be 65 bytes for an account without code; got ${size(signature)}`);
  }
  return signature === signed && recovered ? recovered : recoversTo(ctx, payer, digest, signature);
}

/** Whether a 65-byte signature recovers to `payer`. */
export async function recoversTo(
  ctx: EvmContext,
  payer: Address,
  digest: Hex,
  signature: Hex,
): Promise<Step<Signed>> {
  let signer: Address | undefined;
  try {
    signer = await recoverSigner(ctx.client, digest, signature);
  } catch (error) {
    return refuse(chainFailure(error, "recovering the signer"));
  }
  if (!signer) return invalid("cannot be recovered");
  return isAddressEqual(signer, payer)
    ? { ok: true, value: {} }
    : invalid(`recovers to ${signer}, not to the payer ${payer}`);
}

/** A journaled payment's 65-byte signature recovers to `owner` (others were checked when sent). */
export async function journaledSigner(
  ctx: EvmContext,
  owner: Address,
  digest: Hex,
  signature: Hex,
): Promise<Failure | null> {
  if (size(signature) !== 65) return null;
  const signed = await recoversTo(ctx, owner, digest, signature);
  return signed.ok ? null : signed.failure;
}

/** journaledSigner for a payment signed in the token's EIP-712 domain, which it must name. */
export function journaledTokenSigner(
  ctx: EvmContext,
  payment: SignedPayment<unknown>,
  owner: Address,
  digest: Hex,
): Promise<Failure | null> | Failure {
  if (!payment.domain) {
    return failure("missing_eip712_domain", "requirements.extra must carry name and version");
  }
  return journaledSigner(ctx, owner, digest, payment.signature);
}

/** The signature inside an ERC-6492 wrapper, or the signature itself. */
export function innerSignature(signature: Hex): Hex {
  return isErc6492Signature(signature) ? parseErc6492Signature(signature).signature : signature;
}

/** The payer's wallet's verdict on its signature: unreachable is a chain failure, not a refusal. */
async function walletSays(
  valid: () => Promise<boolean>,
  signed: Signed,
  wallet: string,
  standard: string,
): Promise<Step<Signed>> {
  try {
    if (await valid()) return { ok: true, value: signed };
  } catch (error) {
    if (isUnreachable(error)) return refuse(chainFailure(error, `asking the ${wallet}`));
  }
  return invalid(`is refused by the ${wallet} ${standard}`);
}

const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

/** The settlement call, deploying a counterfactual wallet first via Multicall3: the deployment
 * may fail (deployed meanwhile), the transfer may not. */
export function withDeployment(
  call: { readonly to: Address; readonly data: Hex },
  deployment: Deployment | undefined,
): { readonly to: Address; readonly data: Hex } {
  if (!deployment) return call;
  return {
    to: MULTICALL3_ADDRESS,
    data: encodeFunctionData({
      abi: multicall3Abi,
      functionName: "aggregate3",
      args: [
        [
          { target: deployment.factory, allowFailure: true, callData: deployment.calldata },
          { target: call.to, allowFailure: false, callData: call.data },
        ],
      ],
    }),
  };
}
