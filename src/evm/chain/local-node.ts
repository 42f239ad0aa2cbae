/**
 * Whether a chain is served by a local development node (anvil, hardhat), which mines a
 * transaction as soon as it is ready. Its pool can still pass one over (follow.ts); how soon that
 * is caught decides how long a settle stalls there.
 */
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

export function isLocalNode(client: ChainAccess["client"]): Promise<boolean> {
  let known = localNodes.get(client);
  if (!known) {
    known = client.request({ method: "web3_clientVersion" }).then(
      (version) => /^(anvil|hardhat)/i.test(String(version)),
      () => {
        localNodes.delete(client);
        return false;
      },
    );
    localNodes.set(client, known);
  }
  return known;
}
