/** What `facilitator doctor` looks at. Each check returns findings; none of them throws. */
import { accessSync, constants, existsSync } from "node:fs";
import path from "node:path";
import type { Address, PublicClient } from "viem";
import type { JournalEntry } from "../../../core/store.js";
import { isDevnetChain } from "../../../evm/devnet/detect.js";
import { caip2, knownNetwork } from "../../../protocol/networks.js";
import { durationInWords } from "../../../protocol/words.js";
import { type RpcRegistry, redactUrl, unreachableReason } from "../../../rpc/rpc.js";
import { Journal } from "../../../store/journal.js";
import { genesisHash, markerBeside } from "../../facilitator/devnet-marker.js";
import { goneDevnetDir, STALE_DEVNET_FIX, staleDevnetProblem } from "../../io/stale-devnet.js";
import { journalHolder } from "../../locks/settlement-locks.js";
import type { CliConfig } from "../../settings/config.js";
import { waysToSet } from "../../settings/setting-rows.js";
import { SETTINGS } from "../../settings/settings.js";

/** How bad a finding is, and the exit status it stands for. */
export type Level = "ok" | "warning" | "error" | "unreachable";
export const EXIT_OF: Record<Level, number> = { ok: 0, warning: 1, error: 2, unreachable: 3 };

export interface Finding {
  readonly area: "config" | "rpc" | "key" | "journal" | "store" | "tokens" | "limits" | "deny";
  readonly level: Level;
  readonly message: string;
  readonly fix?: string;
}

export const finding = (
  area: Finding["area"],
  level: Level,
  message: string,
  fix?: string,
): Finding => (fix === undefined ? { area, level, message } : { area, level, message, fix });

export const errorFinding = (area: Finding["area"], error: unknown): Finding =>
  finding(area, "error", (error as Error).message);

/** A node whose newest block is older than this is probably not following its chain. */
const STALE_BLOCK_SECONDS = 300;

export interface ChainSeen {
  readonly chainId: number;
  readonly devnet: boolean;
  readonly client: PublicClient;
}

export async function checkRpcs(
  rpc: RpcRegistry,
  config: CliConfig,
): Promise<{ findings: Finding[]; chains: ChainSeen[] }> {
  const chains: ChainSeen[] = [];
  if (config.rpcUrls.length === 0) {
    const none = rpc.usesPublicRpcs
      ? finding(
          "rpc",
          "warning",
          "no RPC configured: the well-known networks are served through their public RPCs",
          `name your own RPCs with ${waysToSet(SETTINGS.rpcUrls)}`,
        )
      : finding(
          "rpc",
          "error",
          "no RPC configured and public RPCs are off: nothing is served",
          `add an RPC with ${waysToSet(SETTINGS.rpcUrls)}`,
        );
    return { findings: [none], chains };
  }
  const look = async (endpoint: { solana?: string; chainId?: number }, url: string) => {
    if (endpoint.solana !== undefined) {
      return finding("rpc", "ok", `${url} serves ${endpoint.solana} (Solana)`);
    }
    const chainId = endpoint.chainId;
    if (chainId === undefined) {
      const fix =
        "check the URL and that the node runs (a devnet prints its URL; source its devnet.env)";
      return finding("rpc", "unreachable", `${url} cannot be reached`, fix);
    }
    const client = await rpc.client(chainId);
    try {
      const started = performance.now();
      const block = await client.getBlock();
      const ms = Math.round(performance.now() - started);
      const devnet = await isDevnetChain(client, chainId);
      const label = devnet
        ? "a facilitator devnet"
        : (knownNetwork(chainId)?.label ?? "a chain not in the registry");
      const age = Math.floor(Date.now() / 1000) - Number(block.timestamp);
      const stale = !devnet && age > STALE_BLOCK_SECONDS;
      if (!chains.some((c) => c.chainId === chainId)) chains.push({ chainId, devnet, client });
      return finding(
        "rpc",
        stale ? "warning" : "ok",
        `${url} serves ${caip2(chainId)} (${label}), block ${block.number}${stale ? ` from ${durationInWords(age)} ago` : ""}, ${ms} ms`,
        stale ? "the node seems not to follow its chain: check that it is synced" : undefined,
      );
    } catch (error) {
      const reason = unreachableReason(error);
      return finding("rpc", "unreachable", `${url} answered its chain id, then failed (${reason})`);
    }
  };
  const findings: Finding[] = [];
  for (const [i, endpoint] of (await rpc.endpoints()).entries()) {
    findings.push(await look(endpoint, redactUrl(config.rpcUrls[i] as string)));
  }
  return { findings, chains };
}

export async function checkJournal(
  config: CliConfig,
  chains: readonly ChainSeen[],
): Promise<Finding[]> {
  const file = config.journalPath;
  const gone = goneDevnetDir(file);
  if (gone) {
    const message = `${file}: ${staleDevnetProblem(gone)}`;
    return [finding("journal", "error", message, STALE_DEVNET_FIX)];
  }
  if (!existsSync(file)) {
    let dir = path.dirname(file);
    while (!existsSync(dir) && path.dirname(dir) !== dir) dir = path.dirname(dir);
    try {
      accessSync(dir, constants.W_OK);
      return [finding("journal", "ok", `${file} (created by the first settle)`)];
    } catch {
      const message = `${file} cannot be created: ${dir} is not writable`;
      return [finding("journal", "error", message, "pass --journal FILE in a writable directory")];
    }
  }
  let open: JournalEntry[] = [];
  try {
    accessSync(file, constants.R_OK | constants.W_OK);
    // Only read: never rewritten (compacted) while another process may be appending to it.
    const journal = new Journal(file, { compactAfterLines: Number.POSITIVE_INFINITY });
    open = (await journal.openSettlements(0)).filter((e) => !e.key.includes("#"));
    journal.close();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unusable";
    const fix = "fix its permissions, or pass --journal FILE";
    return [finding("journal", "error", `${file} cannot be used (${code})`, fix)];
  }
  const findings: Finding[] = [];
  const marker = markerBeside(file);
  if (marker) {
    const chain = chains.find((c) => c.chainId === marker.chainId);
    const served = chain ? await genesisHash(chain.client).catch(() => undefined) : undefined;
    if (served && served !== marker.genesisHash) {
      const message = `${file} belongs to a devnet that has stopped (the RPC for ${caip2(marker.chainId)} serves another chain now)`;
      const fix = "source the running devnet's devnet.env, or pass --journal FILE";
      return [finding("journal", "error", message, fix)];
    }
  }
  const holder = journalHolder(file);
  if (holder) findings.push(finding("journal", "ok", `${file} is in use by ${holder}`));
  findings.push(
    openSettlementsFinding("journal", `${file}${marker ? " (this devnet's)" : ""}`, open),
  );
  findings.push(...(await checkBlockedKeys(open, chains)));
  return findings;
}

/** Settlements written down and not at their end, and the oldest one's age. */
export function openSettlementsFinding(
  area: "journal" | "store",
  where: string,
  open: readonly JournalEntry[],
): Finding {
  if (open.length === 0) {
    return finding(area, "ok", `${where}, nothing ${area === "store" ? "" : "left "}unsettled`);
  }
  const oldest = Math.min(...open.map((e) => e.updatedAt ?? Date.now()));
  const age = durationInWords(Math.max(0, Date.now() - oldest) / 1000);
  const submitted = open.filter((e) => e.state === "submitted").length;
  // The transactions themselves, so they can be looked up; a few, the oldest first.
  const named = open
    .slice(0, 3)
    .map((e) => e.hashes.at(-1))
    .filter((h) => h !== undefined);
  return finding(
    area,
    "warning",
    `${where}: ${open.length} settlement${open.length === 1 ? "" : "s"} not followed to the end yet${submitted ? ` (${submitted} answered submitted, not mined yet)` : ""}, the oldest for ${age}: ${named.join(", ")}${open.length > named.length ? ", …" : ""}`,
    "facilitator reconcile follows them (serve does it every few seconds); facilitator status --transaction <hash> tells one",
  );
}

/** Unmined this long while it is its key's next: more than replacements and a timeout take. */
const BLOCKED_AFTER_MS = 2 * 60_000;

/** A key blocked by a transaction of ours the node took long ago and does not mine. */
export async function checkBlockedKeys(
  open: readonly JournalEntry[],
  chains: readonly ChainSeen[],
  now = Date.now(),
): Promise<Finding[]> {
  const oldest = new Map<string, JournalEntry>();
  for (const entry of open) {
    const id = `${entry.network}:${entry.signer.toLowerCase()}`;
    const seen = oldest.get(id);
    if (!seen || entry.txNonce < seen.txNonce) oldest.set(id, entry);
  }
  const findings: Finding[] = [];
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
    const message = `${entry.signer} is blocked on ${entry.network}: its transaction at nonce ${entry.txNonce} (${entry.hashes.at(-1)}) has not been mined since ${since}, and every later one of this key waits behind it`;
    const fix = `get the newest signed bytes (facilitator status <hash>) to a node that mines them, or settle with another key meanwhile`;
    findings.push(finding("key", "warning", message, fix));
  }
  return findings;
}

/** RPC rate and batch-size refusals doctor met: waited out or split, so only warnings. */
export function checkProviderLimits(rpc: RpcRegistry): Finding[] {
  return rpc.providerLimits().flatMap(({ url, rateLimited, calls, refusedBatches, batchLimit }) => {
    const rate = `${url} rate-limited ${rateLimited} of ${calls} calls (HTTP 429 or "limit exceeded"); each was sent again after the wait it asked for (at most 2 s)`;
    const rateFix = `settles wait on it too: raise the plan's rate limit, or add a second RPC for the chain with ${waysToSet(SETTINGS.rpcUrls)} to fail over to`;
    const batch = `${url} refused ${refusedBatches} batch request${refusedBatches === 1 ? "" : "s"} as too large; batches to it now carry at most ${batchLimit} call${batchLimit === 1 ? "" : "s"}`;
    const batchFix = `set its limit with ${waysToSet(SETTINGS.rpcBatchLimit)} so that no batch is refused`;
    return [
      ...(rateLimited > 0 ? [finding("rpc", "warning", rate, rateFix)] : []),
      ...(refusedBatches > 0 ? [finding("rpc", "warning", batch, batchFix)] : []),
    ];
  });
}
