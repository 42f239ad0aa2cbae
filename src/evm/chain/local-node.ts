/**
 * Whether a chain is served by a local development node (anvil, hardhat), which mines a
 * transaction as soon as it is ready. Its pool can still pass one over (follow.ts); how soon that
 * is caught decides how long a settle stalls there.
 */
import { isUnreachable } from "../../rpc/rpc.js";
import type { ChainAccess } from "./access.js";

/**
 * A local node mines a transaction as soon as it is ready. One of ours still unmined this long
 * after it was sent, while it is its key's next, was passed over: anvil's pool can file a
 * transaction as waiting for a predecessor that is being mined at that moment, and then never look
 * at it again. Only a new transaction at the same nonce wakes it, and there a replacement costs
 * nothing.
 */
export const LOCAL_PARKED_AFTER_MS = 1_000;

const localNodes = new WeakMap<object, Promise<boolean>>();
/** The newest block each client's node has shown us, in a receipt. */
const newestBlocks = new WeakMap<object, bigint>();
/** The answers already in, for a caller that must not wait for the question. */
const known = new WeakMap<object, boolean>();

export function isLocalNode(client: ChainAccess["client"]): Promise<boolean> {
  let asked = localNodes.get(client);
  if (!asked) {
    asked = client.request({ method: "web3_clientVersion" }).then(
      (version) => {
        const local = /^(anvil|hardhat)/i.test(String(version));
        known.set(client, local);
        return local;
      },
      (error: unknown) => {
        // Not reached: ask again next time. A node that refuses the method is no local node.
        if (isUnreachable(error)) localNodes.delete(client);
        else known.set(client, false);
        return false;
      },
    );
    localNodes.set(client, asked);
  }
  return asked;
}

/** Whether the client is known to be a local node: undefined until the first answer is in. */
export function knownLocalNode(client: ChainAccess["client"]): boolean | undefined {
  void isLocalNode(client);
  return known.get(client);
}

/** Notes the block of a receipt the node gave us: the newest one is kept. */
export function sawBlock(client: ChainAccess["client"], block: bigint): void {
  const newest = newestBlocks.get(client);
  if (newest === undefined || block > newest) newestBlocks.set(client, block);
}

/**
 * The newest block the node has shown us: no later than its head when a transaction is broadcast
 * now, so blocks after it that leave the transaction unmined passed it over (follow.ts). The head
 * read when the synchronous send gives up, a second later, missed the blocks of that second: on the
 * devnet's anvil (--mixed-mining, which answers anvil_getAutomine false) the interval block that
 * passed it over, so the settle waited for the next one, over two seconds. An older block only
 * counts more blocks: on a node that mines on an interval alone, a transaction waiting for its
 * block may be replaced once at the same nonce (follow.ts then waits for a block that passes the
 * replacement over too), which costs nothing there.
 */
export function newestBlockSeen(client: ChainAccess["client"]): bigint | undefined {
  return newestBlocks.get(client);
}
