/** Follows a sent transaction until confirmed, failed, unlandable (blockhash gone) or timed out. */
import { setTimeout as delay } from "node:timers/promises";
import type { Client } from "viem";
import { isUnreachable } from "../../rpc/rpc.js";
import { isBlockhashValid, signatureStatuses } from "./rpc.js";

export type Landing =
  | { readonly kind: "confirmed"; readonly slot: bigint }
  | { readonly kind: "failed"; readonly slot: bigint; readonly err: unknown }
  | { readonly kind: "expired" }
  | { readonly kind: "timeout" };

/** The first wait between status polls; each next one doubles, up to the poll interval. */
const FIRST_POLL_MS = 25;

/** Blockhash validity is asked every this many polls (a status is asked every poll). */
const BLOCKHASH_EVERY = 4;

export async function followSignature(
  client: Client,
  signature: string,
  blockhash: string,
  options: {
    readonly timeoutMs: number;
    readonly pollMs: number;
    /** Nobody waits for the answer: its timers never hold the process up. */
    readonly background?: boolean | undefined;
  },
): Promise<Landing> {
  const deadline = Date.now() + options.timeoutMs;
  for (let poll = 0; ; poll++) {
    try {
      const landed = await statusOf(client, signature);
      if (landed) return landed;
      if (
        poll % BLOCKHASH_EVERY === BLOCKHASH_EVERY - 1 &&
        !(await isBlockhashValid(client, blockhash))
      ) {
        // It may have landed between the two questions.
        return (await statusOf(client, signature)) ?? { kind: "expired" };
      }
    } catch (error) {
      if (!isUnreachable(error)) throw error;
    }
    // Asked soon at first (a slot is 400 ms), then every pollMs.
    const wait = Math.min(options.pollMs, FIRST_POLL_MS * 2 ** poll);
    if (Date.now() + wait > deadline) return { kind: "timeout" };
    await delay(wait, undefined, { ref: !options.background });
  }
}

/** Confirmed or failed (at `confirmed` commitment), else undefined: not landed, or only processed. */
async function statusOf(client: Client, signature: string): Promise<Landing | undefined> {
  const [status] = await signatureStatuses(client, [signature]);
  if (!status?.confirmed) return undefined;
  if (status.err !== null) return { kind: "failed", slot: status.slot, err: status.err };
  return { kind: "confirmed", slot: status.slot };
}
