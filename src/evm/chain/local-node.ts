/**
 * Whether a chain is served by a local development node (anvil, hardhat), which mines a
 * transaction as soon as it is ready. Its pool can still pass one over (follow.ts); how soon that
 * is caught decides how long a settle stalls there.
 */
import { isUnreachable } from "../../core/rpc.js";
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
