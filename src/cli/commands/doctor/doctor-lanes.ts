/** `doctor`: a key blocked by a transaction of ours the node took long ago and does not mine. */
import type { Address, PublicClient } from "viem";
import type { JournalEntry } from "../../../core/store.js";
import { caip2 } from "../../../protocol/networks.js";

/** A doctor finding (doctor-checks.ts' Finding, which imports this file). */
interface Warning {
  readonly area: "key";
  readonly level: "warning";
  readonly message: string;
  readonly fix: string;
}

/** Unmined this long while it is its key's next: more than replacements and a timeout take. */
const BLOCKED_AFTER_MS = 2 * 60_000;

export async function checkBlockedKeys(
  open: readonly JournalEntry[],
  chains: readonly { readonly chainId: number; readonly client: PublicClient }[],
  now = Date.now(),
): Promise<Warning[]> {
  const oldest = new Map<string, JournalEntry>();
  for (const entry of open) {
    const id = `${entry.network}:${entry.signer.toLowerCase()}`;
    const seen = oldest.get(id);
    if (!seen || entry.txNonce < seen.txNonce) oldest.set(id, entry);
  }
  const findings: Warning[] = [];
  for (const entry of oldest.values()) {
    const chain = chains.find((c) => caip2(c.chainId) === entry.network);
    if (!chain || entry.updatedAt === undefined || now - entry.updatedAt < BLOCKED_AFTER_MS) {
      continue;
    }
    const mined = await chain.client
      .getTransactionCount({ address: entry.signer as Address, blockTag: "latest" })
      .catch(() => undefined);
    if (mined !== entry.txNonce) continue;
    const since = new Date(entry.updatedAt).toISOString();
    findings.push({
      area: "key",
      level: "warning",
      message: `${entry.signer} is blocked on ${entry.network}: its transaction at nonce ${entry.txNonce} (${entry.hashes.at(-1)}) has not been mined since ${since}, and every later one of this key waits behind it`,
      fix: "get the newest signed bytes (facilitator status <hash>) to a node that mines them, or settle with another key meanwhile",
    });
  }
  return findings;
}
