/** Reading what a mined settlement did. */
import { type Hex, isAddressEqual, type PublicClient, padHex, type TransactionReceipt } from "viem";
import type { EvmTransfer } from "./entry.js";

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const topicOf = (address: string) => padHex(address.toLowerCase() as Hex, { size: 32 });

/** The receipt of the first of `hashes` the node has mined (unreadable ones count as not). */
export async function firstReceipt(client: PublicClient, hashes: readonly string[]) {
  const receipts = await Promise.all(
    hashes.map((hash) =>
      client.getTransactionReceipt({ hash: hash as Hex }).catch(() => undefined),
    ),
  );
  return receipts.find((r) => r !== undefined);
}

/** Whether the receipt carries the ERC-20 Transfer that proves the payment. */
export function receiptHasTransfer(receipt: TransactionReceipt, expect: EvmTransfer): boolean {
  return receipt.logs.some(
    (log) =>
      isAddressEqual(log.address, expect.token) &&
      log.topics[0] === TRANSFER_TOPIC &&
      log.topics[1]?.toLowerCase() === topicOf(expect.from) &&
      log.topics[2]?.toLowerCase() === topicOf(expect.to) &&
      BigInt(log.data) === BigInt(expect.value),
  );
}
