/**
 * Telling devnets apart: they share chain id, contracts and keys, but not the genesis hash, which
 * devnet.json records beside its files and is checked against the chain.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import type { Hex, PublicClient } from "viem";
import type { Facilitator } from "../../facilitator.js";
import { readSmallFile } from "../io/bounded-read.js";
import { UsageError } from "../io/errors.js";
import { warn } from "../io/output.js";

export interface DevnetMarker {
  readonly chainId: number;
  readonly genesisHash: Hex;
}

/** The marker in the devnet.json beside `file`, if there is one. */
export function markerBeside(file: string): DevnetMarker | undefined {
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

/** The genesis hash the RPC for the marker's chain serves now, or undefined if it cannot say. */
async function servedGenesis(marker: DevnetMarker, facilitator: Facilitator) {
  try {
    return await genesisHash(await facilitator.rpc.client(marker.chainId));
  } catch {
    return undefined; // not served, or unreachable: the command itself will say so
  }
}

/** A devnet's request file read while another devnet answers: said on stderr, answer unchanged. */
export async function warnIfFromAnotherDevnet(
  file: string | undefined,
  facilitator: Facilitator,
): Promise<void> {
  if (file === undefined || file === "-") return;
  const marker = markerBeside(file);
  if (!marker) return;
  const served = await servedGenesis(marker, facilitator);
  if (!served || served === marker.genesisHash) return;
  warn(
    `${file} was signed for the devnet whose genesis block is ${short(marker.genesisHash)}, ` +
      `but the RPC for eip155:${marker.chainId} now serves another chain (genesis ${short(served)}): ` +
      "that devnet has stopped or this is another one. The answer is this chain's; every devnet " +
      "has the same chain id, tokens and keys, so the payment may be valid here too.",
  );
}

/** A devnet's journal used while another devnet answers follows a chain that is gone: refused. */
export async function checkDevnetJournal(
  journalPath: string,
  facilitator: Facilitator,
): Promise<void> {
  const marker = markerBeside(journalPath);
  if (!marker) return;
  const served = await servedGenesis(marker, facilitator);
  if (!served || served === marker.genesisHash) return;
  throw new UsageError(
    `the journal ${journalPath} belongs to the devnet whose genesis block is ${short(marker.genesisHash)}, ` +
      `but the RPC for eip155:${marker.chainId} now serves another chain (genesis ${short(served)}): ` +
      "that devnet has stopped. Use the running devnet's devnet.env (its journal is in its directory), or --journal FILE",
  );
}
