/** Whether a chain is served by a local development node (anvil, hardhat), which mines at once. */
import { isUnreachable } from "../../rpc/rpc.js";
import type { ChainAccess } from "./access.js";

/** Ours unmined this long on a local node while its key's next is parked (anvil's pool can park
 * it for good): only a replacement at the nonce, free there, wakes it. */
export const LOCAL_PARKED_AFTER_MS = 1_000;

const localNodes = new WeakMap<object, Promise<boolean>>();
/** The newest block each client's node has shown us, in a receipt. */
const newestBlocks = new WeakMap<object, bigint>();
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
        if (isUnreachable(error)) localNodes.delete(client);
        else known.set(client, false);
        return false;
      },
    );
    localNodes.set(client, asked);
  }
  return asked;
}

/** Undefined until the first answer is in. */
export function knownLocalNode(client: ChainAccess["client"]): boolean | undefined {
  void isLocalNode(client);
  return known.get(client);
}

export function sawBlock(client: ChainAccess["client"], block: bigint): void {
  const newest = newestBlocks.get(client);
  if (newest === undefined || block > newest) newestBlocks.set(client, block);
}

/** The newest block the node showed us: no later than its head at a broadcast now, so later blocks
 * leaving it unmined passed it over (a head read after a sync send would miss that second's). */
export function newestBlockSeen(client: ChainAccess["client"]): bigint | undefined {
  return newestBlocks.get(client);
}
