/** The `batch-settlement` scheme's fixed facts (`@x402/evm` 2.27): addresses, EIP-712, the ABI. */
import {
  type Address,
  type ContractFunctionArgs,
  type ContractFunctionName,
  decodeFunctionResult,
  encodeFunctionData,
  type Hex,
  parseAbi,
  parseAbiParameters,
} from "viem";
import { transferWithAuthorizationTypes } from "../exact/eip3009-encoding.js";
import { permit2WitnessTypes } from "../exact/permit2-encoding.js";

export const BATCH_SETTLEMENT = "batch-settlement";

export const SETTLEMENT_ADDRESS: Address = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
export const ERC3009_COLLECTOR_ADDRESS: Address = "0x4020806089470a89826cB9fB1f4059150b550004";
export const PERMIT2_COLLECTOR_ADDRESS: Address = "0x4020425FAf3B746C082C2f942b4E5159887B0005";

/** A channel's withdraw delay, in seconds: 15 minutes to 30 days. */
export const MIN_WITHDRAW_DELAY = 900;
export const MAX_WITHDRAW_DELAY = 2_592_000;

export function settlementDomain(chainId: number) {
  return {
    name: "x402 Batch Settlement",
    version: "1",
    chainId,
    verifyingContract: SETTLEMENT_ADDRESS,
  } as const;
}

/** A channel's configuration, as its EIP-712 struct and as the contract's ABI tuple. */
const CONFIG_FIELDS =
  "address payer, address payerAuthorizer, address receiver, address receiverAuthorizer, address token, uint40 withdrawDelay, bytes32 salt";

export const CHANNEL_CONFIG_TYPES = { ChannelConfig: parseAbiParameters(CONFIG_FIELDS) } as const;

export const VOUCHER_TYPES = {
  Voucher: parseAbiParameters("bytes32 channelId, uint128 maxClaimableAmount"),
} as const;

export const CLAIM_BATCH_TYPES = {
  ClaimBatch: [{ name: "claims", type: "ClaimEntry[]" }],
  ClaimEntry: parseAbiParameters(
    "bytes32 channelId, uint128 maxClaimableAmount, uint128 totalClaimed",
  ),
} as const;

export const REFUND_TYPES = {
  Refund: parseAbiParameters("bytes32 channelId, uint256 nonce, uint128 amount"),
} as const;

/** What the payer signs for an EIP-3009 deposit: the collector receives, nobody else can. */
export const RECEIVE_AUTHORIZATION_TYPES = {
  ReceiveWithAuthorization: transferWithAuthorizationTypes.TransferWithAuthorization,
} as const;

const [permitted, spender, nonce, deadline] = permit2WitnessTypes.PermitWitnessTransferFrom;

/** What the payer signs for a Permit2 deposit: the witness binds it to one channel. */
export const DEPOSIT_WITNESS_TYPES = {
  PermitWitnessTransferFrom: [
    permitted,
    spender,
    nonce,
    deadline,
    { name: "witness", type: "DepositWitness" },
  ],
  TokenPermissions: permit2WitnessTypes.TokenPermissions,
  DepositWitness: [{ name: "channelId", type: "bytes32" }],
} as const;

const CONFIG = `(${CONFIG_FIELDS})`;
const CLAIM = `((${CONFIG} channel, uint128 maxClaimableAmount) voucher, bytes signature, uint128 totalClaimed)`;

export const SETTLEMENT_ABI = parseAbi([
  `function deposit(${CONFIG} config, uint128 amount, address collector, bytes collectorData)`,
  `function claimWithSignature(${CLAIM}[] voucherClaims, bytes authorizerSignature)`,
  "function settle(address receiver, address token)",
  `function refundWithSignature(${CONFIG} config, uint128 amount, uint256 nonce, bytes receiverAuthorizerSignature)`,
  "function multicall(bytes[] data) returns (bytes[] results)",
  "function channels(bytes32 channelId) view returns (uint128 balance, uint128 totalClaimed)",
  "function pendingWithdrawals(bytes32 channelId) view returns (uint128 amount, uint40 initiatedAt)",
  "function refundNonce(bytes32 channelId) view returns (uint256)",
  "function receivers(address receiver, address token) view returns (uint128 totalClaimed, uint128 totalSettled)",
  "event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount)",
]);

type SettlementFunction = ContractFunctionName<typeof SETTLEMENT_ABI>;

/** A call of the settlement contract's `functionName`. */
export function settlementCall<F extends SettlementFunction>(
  functionName: F,
  args: ContractFunctionArgs<typeof SETTLEMENT_ABI, "nonpayable" | "view", F>,
) {
  const data = encodeFunctionData({ abi: SETTLEMENT_ABI, functionName, args } as never);
  return { to: SETTLEMENT_ADDRESS, data };
}

/** What the settlement contract's view `functionName` returned in `data`. */
export const settlementResult = (functionName: SettlementFunction, data: Hex): unknown =>
  decodeFunctionResult({ abi: SETTLEMENT_ABI, functionName, data });
