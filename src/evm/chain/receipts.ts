/** Reading what a mined settlement did. */
import { type Hex, isAddressEqual, padHex, type TransactionReceipt } from "viem";
import type { EvmTransfer } from "./entry.js";

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const topicOf = (address: string) => padHex(address.toLowerCase() as Hex, { size: 32 });

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
