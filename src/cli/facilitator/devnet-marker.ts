/** Devnets share chain id, contracts and keys, but not the genesis hash devnet.json records. */
import { existsSync } from "node:fs";
import path from "node:path";
import type { Hex, PublicClient } from "viem";
import type { Facilitator } from "../../facilitator.js";
import { readSmallFile } from "../io/bounded-read.js";
import { UsageError } from "../io/errors.js";
import { warn } from "../io/output.js";

/** The marker in the devnet.json beside `file`, if there is one. */
export function markerBeside(file: string): { chainId: number; genesisHash: Hex } | undefined {
  const devnetJson = path.join(path.dirname(path.resolve(file)), "devnet.json");
  if (!existsSync(devnetJson)) return undefined;
  try {
    const info = JSON.parse(readSmallFile(devnetJson, devnetJson, process.env)) as unknown;
    const { chainId, genesisHash } = (info ?? {}) as Record<string, unknown>;
    if (typeof chainId !== "number" || typeof genesisHash !== "string") return undefined;
    return { chainId, genesisHash: genesisHash as Hex };
  } catch {
    return undefined;
  }
}

/** The hash of block 0: which chain this is, beyond its chain id. */
export async function genesisHash(client: PublicClient): Promise<Hex | undefined> {
  const block = await client.getBlock({ blockNumber: 0n });
  return block.hash ?? undefined;
}

const short = (hash: Hex) => `${hash.slice(0, 10)}…`;

/** The devnet beside `file` and the other chain its RPC serves now; undefined if not so. */
async function anotherDevnet(file: string, facilitator: Facilitator) {
  const marker = markerBeside(file);
  if (!marker) return undefined;
  // Not served, or unreachable: the command itself will say so.
  const served = await facilitator.rpc
    .client(marker.chainId)
    .then(genesisHash)
    .catch(() => undefined);
  if (!served || served === marker.genesisHash) return undefined;
  return `whose genesis block is ${short(marker.genesisHash)}, but the RPC for eip155:${marker.chainId} now serves another chain (genesis ${short(served)}): that devnet has stopped`;
}

/** A devnet's request file read while another devnet answers: said on stderr, answer unchanged. */
export async function warnIfFromAnotherDevnet(
  file: string | undefined,
  facilitator: Facilitator,
): Promise<void> {
  if (file === undefined || file === "-") return;
  const other = await anotherDevnet(file, facilitator);
  if (!other) return;
  warn(
    `${file} was signed for the devnet ${other} or this is another one. The answer is this chain's; every devnet has the same chain id, tokens and keys, so the payment may be valid here too.`,
  );
}

/** A devnet's journal used while another devnet answers follows a chain that is gone: refused. */
export async function checkDevnetJournal(
  journalPath: string,
  facilitator: Facilitator,
): Promise<void> {
  const other = await anotherDevnet(journalPath, facilitator);
  if (!other) return;
  throw new UsageError(
    `the journal ${journalPath} belongs to the devnet ${other}. Use the running devnet's devnet.env (its journal is in its directory), or --journal FILE`,
  );
}
