/**
 * The chain's own pace for settles, with no facilitator in between: `count` EIP-3009
 * `transferWithAuthorization` transactions, each carrying a payer's signed authorization as a
 * settle would, signed beforehand from one key with sequential nonces, then sent straight to the
 * node `concurrency` at a time, each waiting for its receipt as a `confirmed` settle does
 * (eth_sendRawTransactionSync where the node has it, as our broadcast uses). What a facilitator
 * adds on top (verify, bookkeeping, signing in turn) is what its settles/s lose against this.
 */
import {
  type Address,
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
  type PublicClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { DevAccount, Devnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { transferCalldata } from "../src/evm/exact/eip3009-encoding.js";
import { jsonRpcTransport } from "../src/rpc/json-rpc.js";
import { cpuMs } from "./lib.js";

export interface FloorRun {
  /** CPU ms anvil and this process (the sender) used while sending, from /proc. */
  readonly anvilMs: number | undefined;
  readonly clientMs: number;
  readonly count: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly errors: string[];
}

/** An error's first line and, for viem's, its details (the node's own words). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const details = (error as { details?: unknown }).details;
  const first = error.message.split("\n")[0] ?? "";
  return typeof details === "string" && details ? `${first} (${details})` : first;
}

/** Gas per transfer: above the ~69k one costs, as a facilitator's estimate would be. */
const GAS = 120_000n;

interface SignedAuthorization {
  readonly payload: { authorization: Record<string, string>; signature: Hex };
}

/** `count` signed transactions from `sender`, nonces from its next one upward. */
async function signTransfers(
  devnet: Devnet,
  client: PublicClient,
  sender: DevAccount,
  count: number,
  amount: bigint,
): Promise<Hex[]> {
  const account = privateKeyToAccount(sender.privateKey);
  const wallet = createWalletClient({ account, transport: http(devnet.rpcUrl) });
  const [nonce, chainId, fees] = await Promise.all([
    client.getTransactionCount({ address: sender.address, blockTag: "pending" }),
    client.getChainId(),
    client.estimateFeesPerGas(),
  ]);
  const requests = await Promise.all(
    Array.from(
      { length: count },
      (_, i) =>
        signSampleRequest(devnet, {
          payer: devnet.payers[i % devnet.payers.length] as DevAccount,
          amount,
          dialect: "x402",
        }) as Promise<{ paymentPayload: SignedAuthorization }>,
    ),
  );
  return Promise.all(
    requests.map(({ paymentPayload }, i) => {
      const a = paymentPayload.payload.authorization;
      const data = transferCalldata(
        {
          from: a.from as Address,
          to: a.to as Address,
          value: BigInt(a.value as string),
          validAfter: BigInt(a.validAfter as string),
          validBefore: BigInt(a.validBefore as string),
          nonce: a.nonce as Hex,
        },
        paymentPayload.payload.signature,
      );
      return wallet.signTransaction({
        account,
        chain: null,
        chainId,
        to: devnet.token.address,
        data,
        nonce: nonce + i,
        gas: GAS,
        maxFeePerGas: (fees.maxFeePerGas ?? 0n) * 2n,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas ?? 0n,
        type: "eip1559",
      });
    }),
  );
}

/**
 * Signs `count` transfers (not timed), then sends them `concurrency` at a time, in nonce order,
 * each answered with its receipt; a transfer whose receipt says reverted counts as an error.
 */
export async function settleFloor(
  devnet: Devnet,
  sender: DevAccount,
  count: number,
  concurrency: number,
  amount: bigint,
): Promise<FloorRun> {
  // The sender speaks to the node as lightly as our server does (node:http, keep-alive), so the
  // floor is the chain's pace and not a heavier client's.
  const client = createPublicClient({
    transport: jsonRpcTransport(devnet.rpcUrl, { retryCount: 0, timeout: 60_000 }),
  });
  const raws = await signTransfers(devnet, client, sender, count, amount);
  const latenciesMs: number[] = [];
  const errors: string[] = [];
  let next = 0;
  let sync = true;
  const send = async (raw: Hex) => {
    if (sync) {
      try {
        return await client.sendRawTransactionSync({
          serializedTransaction: raw,
          throwOnReceiptRevert: false,
        });
      } catch (error) {
        // The node has no eth_sendRawTransactionSync: send, then wait for the receipt.
        if (!/not (found|supported)|does not exist|unknown method/i.test(String(error)))
          throw error;
        sync = false;
      }
    }
    const hash = await client.sendRawTransaction({ serializedTransaction: raw });
    return client.waitForTransactionReceipt({ hash, pollingInterval: 10 });
  };
  const anvilBefore = cpuMs(devnet.anvil.pid);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  const worker = async () => {
    while (next < raws.length) {
      const raw = raws[next] as Hex;
      next += 1;
      const sent = performance.now();
      try {
        const receipt = await send(raw);
        if (receipt.status !== "success") errors.push(`reverted: ${receipt.transactionHash}`);
        else latenciesMs.push(performance.now() - sent);
      } catch (error) {
        errors.push(describe(error));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, raws.length) }, worker));
  const anvilAfter = cpuMs(devnet.anvil.pid);
  const senderCpu = process.cpuUsage(clientBefore);
  return {
    anvilMs:
      anvilBefore === undefined || anvilAfter === undefined ? undefined : anvilAfter - anvilBefore,
    clientMs: (senderCpu.user + senderCpu.system) / 1000,
    count: latenciesMs.length,
    seconds: (performance.now() - started) / 1000,
    latenciesMs,
    errors,
  };
}

/** Rounds of the floor as one run. */
export function mergeFloorRuns(runs: readonly FloorRun[]): FloorRun {
  const anvil = runs.map((r) => r.anvilMs);
  return {
    anvilMs: anvil.some((a) => a === undefined)
      ? undefined
      : anvil.reduce<number>((a, v) => a + (v ?? 0), 0),
    clientMs: runs.reduce((a, r) => a + r.clientMs, 0),
    count: runs.reduce((a, r) => a + r.count, 0),
    seconds: runs.reduce((a, r) => a + r.seconds, 0),
    latenciesMs: runs.flatMap((r) => r.latenciesMs),
    errors: runs.flatMap((r) => r.errors),
  };
}
