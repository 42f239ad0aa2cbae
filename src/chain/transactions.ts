/**
 * Sending one contract call from the settlement account and following it to the level the caller
 * asked for. Returns outcomes, never throws: the payment method decides what a revert means.
 */
import { type Address, type Hex, keccak256, type TransactionReceipt } from "viem";
import { type Failure, failure } from "../errors.js";
import type { WaitUntil } from "../protocol/schemas.js";
import type { SchemeContext } from "../schemes/types.js";
import { isRevert, revertReason } from "./revert.js";
import { isUnreachable, neverReachedNode } from "./rpc.js";

export interface ContractCall {
  readonly to: Address;
  readonly data: Hex;
}

export type CallOutcome =
  /** Signed, and for `simulated` checked against the latest block; not broadcast. */
  | { readonly kind: "simulated"; readonly hash: Hex }
  | { readonly kind: "submitted"; readonly hash: Hex }
  | { readonly kind: "confirmed"; readonly hash: Hex; readonly receipt: TransactionReceipt }
  /** The call would revert: nothing was broadcast. */
  | { readonly kind: "would-revert"; readonly reason: string | undefined; readonly detail: string }
  /** Mined, and reverted. */
  | { readonly kind: "reverted"; readonly hash: Hex; readonly receipt: TransactionReceipt }
  /** Anything else: no settlement key, node refusal, unreachable RPC, no receipt in time. */
  | { readonly kind: "failed"; readonly failure: Failure; readonly hash?: Hex | undefined };

const GAS_HEADROOM_PERCENT = 120n;

function shortText(error: unknown): string {
  if (error instanceof Error) {
    const short = (error as { shortMessage?: string }).shortMessage ?? error.message;
    return short.split("\n")[0] ?? short;
  }
  return String(error);
}

function infrastructure(error: unknown, doing: string): CallOutcome {
  if (isUnreachable(error)) {
    return {
      kind: "failed",
      failure: failure("chain_unavailable", `${doing}: ${shortText(error)}`),
    };
  }
  return {
    kind: "failed",
    failure: failure("settlement_failed", `${doing}: ${shortText(error)}`, { status: 500 }),
  };
}

async function fees(ctx: SchemeContext) {
  try {
    const { maxFeePerGas, maxPriorityFeePerGas } = await ctx.client.estimateFeesPerGas({
      chain: null,
      type: "eip1559",
    });
    return { type: "eip1559", maxFeePerGas, maxPriorityFeePerGas } as const;
  } catch (error) {
    if (isUnreachable(error)) throw error;
    // A chain without EIP-1559 blocks: fall back to a legacy gas price.
    return { type: "legacy", gasPrice: await ctx.client.getGasPrice() } as const;
  }
}

export async function executeCall(
  ctx: SchemeContext,
  call: ContractCall,
  waitUntil: WaitUntil,
): Promise<CallOutcome> {
  const signer = ctx.signer;
  if (!signer) {
    return {
      kind: "failed",
      failure: failure(
        "settlement_failed",
        "no settlement key configured: set FACILITATOR_PRIVATE_KEY or pass --private-key-file",
        { status: 500 },
      ),
    };
  }
  const { client } = ctx;

  let gas: bigint;
  let nonce: number;
  let fee: Awaited<ReturnType<typeof fees>>;
  try {
    // Estimating gas executes the call from our account: a payment that would revert stops here.
    [gas, nonce, fee] = await Promise.all([
      client.estimateGas({ account: signer.address, to: call.to, data: call.data }),
      client.getTransactionCount({ address: signer.address, blockTag: "pending" }),
      fees(ctx),
    ]);
  } catch (error) {
    if (isRevert(error) && !isUnreachable(error)) {
      return { kind: "would-revert", reason: revertReason(error), detail: shortText(error) };
    }
    return infrastructure(error, "preparing the settlement transaction");
  }

  const request = {
    ...fee,
    chainId: ctx.chainId,
    to: call.to,
    data: call.data,
    gas: (gas * GAS_HEADROOM_PERCENT) / 100n,
    nonce,
  };
  const serialized = await signer.signTransaction(request);
  const hash = keccak256(serialized);

  if (waitUntil === "simulated") {
    try {
      const { type: _type, chainId: _chainId, ...params } = request;
      await client.call({ ...params, account: signer.address, blockTag: "latest" });
      return { kind: "simulated", hash };
    } catch (error) {
      if (isRevert(error) && !isUnreachable(error)) {
        return { kind: "would-revert", reason: revertReason(error), detail: shortText(error) };
      }
      return infrastructure(error, "simulating the settlement transaction");
    }
  }

  try {
    await client.sendRawTransaction({ serializedTransaction: serialized });
  } catch (error) {
    if (neverReachedNode(error)) return infrastructure(error, "broadcasting");
    if (isUnreachable(error)) {
      // The node may have taken it before the connection broke: keep the hash, never re-send.
      return {
        kind: "failed",
        hash,
        failure: failure(
          "settlement_pending",
          `the broadcast's answer was lost (${shortText(error)}); the transaction may be pending`,
        ),
      };
    }
    if (!/already known/i.test(shortText(error))) {
      if (isRevert(error)) {
        return { kind: "would-revert", reason: revertReason(error), detail: shortText(error) };
      }
      return infrastructure(error, "the node refused the transaction");
    }
  }
  if (waitUntil === "submitted") return { kind: "submitted", hash };

  const receipt = await waitForReceipt(ctx, hash);
  if (!receipt) {
    return {
      kind: "failed",
      hash,
      failure: failure(
        "settlement_pending",
        `no receipt within ${Math.round(ctx.confirmTimeoutMs / 1000)} s; the transaction is pending`,
      ),
    };
  }
  return receipt.status === "success"
    ? { kind: "confirmed", hash, receipt }
    : { kind: "reverted", hash, receipt };
}

/**
 * Polls for the receipt until the deadline. Never throws: after a broadcast, any trouble reading
 * the chain ends as "pending" with the hash, never as an error that would lose it.
 */
async function waitForReceipt(ctx: SchemeContext, hash: Hex): Promise<TransactionReceipt | null> {
  const deadline = Date.now() + ctx.confirmTimeoutMs;
  for (;;) {
    try {
      return await ctx.client.getTransactionReceipt({ hash });
    } catch {
      // Not mined yet (TransactionReceiptNotFoundError) or an RPC blip: ask again.
    }
    const left = deadline - Date.now();
    if (left <= 0) return null;
    await new Promise((resolve) => setTimeout(resolve, Math.min(ctx.receiptPollMs, left)));
  }
}
