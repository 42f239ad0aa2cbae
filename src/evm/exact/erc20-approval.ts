/** `erc20ApprovalGasSponsoring`: the payer's own signed `approve(Permit2, …)`, its gas funded at
 * its signed fee at most; checked as the reference does, stricter where our gas is at stake. */
import {
  type Address,
  decodeFunctionData,
  erc20Abi,
  getAddress,
  getContract,
  type Hex,
  isAddressEqual,
  parseTransaction,
  recoverTransactionAddress,
  type TransactionSerialized,
} from "viem";
import type { PaymentRequest } from "../../protocol/request.js";
import type { ChainAccess } from "../chain/access.js";
import { estimateFees } from "../chain/fees.js";
import type { PayersTransaction, Prelude } from "../chain/prelude.js";
import type { EvmContext } from "../context.js";
import type { Step } from "./checks.js";
import { PERMIT2_ADDRESS } from "./permit2-encoding.js";
import { extensionInfo, invalidExtension, malformedField } from "./permit2-extensions.js";

export const ERC20_APPROVAL_GAS_SPONSORING = "erc20ApprovalGasSponsoring";

const FIELDS = ["from", "asset", "spender", "amount", "signedTransaction", "version"];
/** The most gas we fund for an approval (the x402 client signs 70,000). */
const MAX_APPROVAL_GAS = 100_000n;
/** The most an approval may offer per gas: a multiple of the chain's fee now, at least 5 gwei. */
const MAX_FEE_MULTIPLE = 3n;
const MAX_FEE_FLOOR = 5_000_000_000n;

/** The payer's approval, ready to be funded and sent. */
export interface SponsoredApproval extends PayersTransaction {
  /** What the approval may cost the payer in gas: what we fund at most. */
  readonly cost: bigint;
}

const refusal = invalidExtension(ERC20_APPROVAL_GAS_SPONSORING);
const invalid = (reason: string, message: string) => refusal(`erc20_approval_${reason}`, message);
const infoOf = (request: PaymentRequest) =>
  extensionInfo(request, ERC20_APPROVAL_GAS_SPONSORING, FIELDS);

/** Whether the payment carries the extension at all. */
export const carriesErc20Approval = (request: PaymentRequest) => infoOf(request) !== undefined;

/** The payer's signed approval from the extensions, or undefined when the payment carries none. */
export async function erc20ApprovalSponsoring(
  ctx: EvmContext,
  request: PaymentRequest,
  payer: Address,
  token: Address,
): Promise<Step<SponsoredApproval> | undefined> {
  const info = infoOf(request);
  if (!info) return undefined;
  const malformed = malformedField(info, FIELDS);
  if (malformed) {
    return refusal("invalid_erc20_approval_extension_format", `info.${malformed} is malformed`);
  }
  const text = (field: string) => info[field] as string;
  if (!isAddressEqual(getAddress(text("from")), payer)) {
    return invalid("from_mismatch", `info.from is not the payer ${payer}`);
  }
  if (!isAddressEqual(getAddress(text("asset")), token)) {
    return invalid("asset_mismatch", `info.asset is not requirements.asset ${token}`);
  }
  if (!isAddressEqual(getAddress(text("spender")), PERMIT2_ADDRESS)) {
    return invalid("spender_not_permit2", `info.spender must be Permit2 (${PERMIT2_ADDRESS})`);
  }
  const raw = text("signedTransaction") as Hex;
  let tx: ReturnType<typeof parseTransaction>;
  try {
    tx = parseTransaction(raw);
  } catch {
    return invalid("tx_parse_failed", "the signed transaction cannot be parsed");
  }
  if (!tx.to || !isAddressEqual(tx.to, token)) {
    const why = `the transaction calls ${tx.to ?? "nothing"}, not the token ${token}`;
    return invalid("tx_wrong_target", why);
  }
  const data = tx.data ?? "0x";
  if (!data.startsWith("0x095ea7b3")) {
    return invalid("tx_wrong_selector", "the transaction is not an approve(address,uint256) call");
  }
  let spender: Address;
  try {
    spender = decodeFunctionData({ abi: erc20Abi, data }).args[0] as Address;
  } catch {
    return invalid("tx_invalid_calldata", "the approve() calldata cannot be decoded");
  }
  if (!isAddressEqual(spender, PERMIT2_ADDRESS)) {
    return invalid("tx_wrong_spender", `the transaction approves ${spender}, not Permit2`);
  }
  let signer: Address;
  try {
    signer = await recoverTransactionAddress({
      serializedTransaction: raw as TransactionSerialized,
    });
  } catch {
    return invalid("tx_invalid_signature", "the transaction's signer cannot be recovered");
  }
  if (!isAddressEqual(signer, payer)) {
    const why = `the transaction is signed by ${signer}, not the payer ${payer}`;
    return invalid("tx_signer_mismatch", why);
  }
  return fundable(ctx, raw, payer, tx);
}

/** Stricter than the reference, since our gas pays for it: chain, gas, fee and nonce. */
async function fundable(
  ctx: EvmContext,
  raw: Hex,
  payer: Address,
  tx: ReturnType<typeof parseTransaction>,
): Promise<Step<SponsoredApproval>> {
  const refuse = (why: string) => invalid("tx_failed", why);
  // A blob or set-code transaction costs more than its gas × fee: only these are funded.
  if (tx.type !== "legacy" && tx.type !== "eip2930" && tx.type !== "eip1559")
    return refuse(`the transaction is of type ${tx.type}, not legacy, EIP-2930 or EIP-1559`);
  if (tx.chainId !== ctx.chainId)
    return refuse(`the transaction is for chain ${tx.chainId}, not ${ctx.chainId}`);
  const gas = tx.gas ?? 0n;
  if (gas === 0n || gas > MAX_APPROVAL_GAS) {
    return refuse(`the transaction's gas limit ${gas} is not between 1 and ${MAX_APPROVAL_GAS}`);
  }
  if ((tx.value ?? 0n) !== 0n) return refuse("the transaction sends ether along");
  const perGas = tx.maxFeePerGas ?? tx.gasPrice ?? 0n;
  const [fees, nonce] = await Promise.all([
    estimateFees(ctx),
    ctx.client.getTransactionCount({ address: payer, blockTag: "pending" }),
  ]);
  const chainPrice = fees.type === "eip1559" ? fees.maxFeePerGas : fees.gasPrice;
  const multiple = chainPrice * MAX_FEE_MULTIPLE;
  const ceiling = multiple > MAX_FEE_FLOOR ? multiple : MAX_FEE_FLOOR;
  if (perGas > ceiling) {
    return refuse(
      `the transaction offers ${perGas} wei per gas, over ${ceiling} (${MAX_FEE_MULTIPLE}× what the chain asks, at least 5 gwei)`,
    );
  }
  if (tx.nonce !== nonce) {
    return refuse(`the transaction has nonce ${tx.nonce}, the payer's next is ${nonce}`);
  }
  return { ok: true, value: { raw, from: payer, nonce, cost: gas * perGas } };
}

/** What lands before the payment: the payer's approval (with the gas it lacks sent first). */
export function approvalPreludes(
  approval: SponsoredApproval,
  token: Address,
  amount: bigint,
): Prelude[] {
  const approvalNeeded = async ({ client }: ChainAccess) => {
    const { read } = getContract({ address: token, abi: erc20Abi, client });
    return (await read.allowance([approval.from, PERMIT2_ADDRESS])) < amount;
  };
  const fund = { payer: approval.from, asset: token, cost: approval.cost };
  const { raw, from, nonce } = approval;
  return [{ name: "approve", tx: { raw, from, nonce, fund }, needed: approvalNeeded }];
}
