/** What `facilitator doctor` looks at. Each check returns findings; none of them throws. */
import { accessSync, constants, existsSync } from "node:fs";
import path from "node:path";
import type { PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { JournalEntry } from "../../../core/store.js";
import { isDevnetChain } from "../../../evm/devnet/detect.js";
import { gasAmount } from "../../../protocol/amounts.js";
import { caip2, knownNetwork } from "../../../protocol/networks.js";
import { durationInWords } from "../../../protocol/words.js";
import { type RpcRegistry, redactUrl, unreachableReason } from "../../../rpc/rpc.js";
import { Journal } from "../../../store/journal.js";
import { genesisHash, markerBeside } from "../../facilitator/devnet-marker.js";
import { goneDevnetDir, STALE_DEVNET_FIX, staleDevnetProblem } from "../../io/stale-devnet.js";
import { journalHolder } from "../../locks/settlement-locks.js";
import type { CliConfig } from "../../settings/config.js";
import { flagName, waysToSet } from "../../settings/setting-rows.js";
import { SETTINGS } from "../../settings/settings.js";
import { checkBlockedKeys } from "./doctor-lanes.js";

/** How bad a finding is, and the exit status it stands for. */
export type Level = "ok" | "warning" | "error" | "unreachable";
export const EXIT_OF: Readonly<Record<Level, number>> = {
  ok: 0,
  warning: 1,
  error: 2,
  unreachable: 3,
};

export interface Finding {
  readonly area: "config" | "rpc" | "key" | "journal" | "store" | "tokens" | "limits" | "deny";
  readonly level: Level;
  readonly message: string;
  readonly fix?: string;
}

/** A finding; `fix` only where there is one. */
export const finding = (
  area: Finding["area"],
  level: Level,
  message: string,
  fix?: string,
): Finding => (fix === undefined ? { area, level, message } : { area, level, message, fix });

/** An error thrown while reading a setting, as the finding it is. */
export const errorFinding = (area: Finding["area"], error: unknown): Finding =>
  finding(area, "error", (error as Error).message);

/** Below this much native token, a settlement account is low on gas (about a few settles). */
const LOW_GAS_WEI = 10n ** 15n;
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
  const findings: Finding[] = [];
  const chains: ChainSeen[] = [];
  if (config.rpcUrls.length === 0) {
    findings.push(
      rpc.usesPublicRpcs
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
          ),
    );
    return { findings, chains };
  }
  const endpoints = await rpc.endpoints();
  for (const [i, endpoint] of endpoints.entries()) {
    const url = config.rpcUrls[i] as string;
    if (endpoint.solana !== undefined) {
      findings.push(finding("rpc", "ok", `${redactUrl(url)} serves ${endpoint.solana} (Solana)`));
      continue;
    }
    if (endpoint.chainId === undefined) {
      findings.push(
        finding(
          "rpc",
          "unreachable",
          `${redactUrl(url)} cannot be reached`,
          "check the URL and that the node runs (a devnet prints its URL; source its devnet.env)",
        ),
      );
      continue;
    }
    const chainId = endpoint.chainId;
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
      findings.push(
        finding(
          "rpc",
          stale ? "warning" : "ok",
          `${redactUrl(url)} serves ${caip2(chainId)} (${label}), block ${block.number}${stale ? ` from ${durationInWords(age)} ago` : ""}, ${ms} ms`,
          stale ? "the node seems not to follow its chain: check that it is synced" : undefined,
        ),
      );
      if (!chains.some((c) => c.chainId === chainId)) chains.push({ chainId, devnet, client });
    } catch (error) {
      const reason = unreachableReason(error);
      findings.push(
        finding(
          "rpc",
          "unreachable",
          `${redactUrl(url)} answered its chain id, then failed (${reason})`,
        ),
      );
    }
  }
  return { findings, chains };
}

function hasSvmFeePayer(config: CliConfig): boolean {
  try {
    return config.loadSvmFeePayers().length > 0;
  } catch {
    return false;
  }
}

export async function checkKeys(
  config: CliConfig,
  chains: readonly ChainSeen[],
): Promise<Finding[]> {
  let keys: `0x${string}`[];
  try {
    keys = config.loadPrivateKeys();
  } catch (error) {
    return [errorFinding("key", error)];
  }
  if (keys.length === 0) {
    if (chains.length === 0 && hasSvmFeePayer(config)) {
      const message =
        "no EVM settlement key, and no EVM chain served: Solana settles with its fee payer";
      return [finding("key", "ok", message)];
    }
    return [
      finding(
        "key",
        "warning",
        "no settlement key: verify works, EVM settle answers settlement_failed",
        `pass ${flagName(SETTINGS.privateKeys.flag)} FILE or set ${SETTINGS.privateKeys.env} (never a flag value)`,
      ),
    ];
  }
  const accounts = keys.map((key) => privateKeyToAccount(key).address);
  const counted =
    accounts.length === 1 ? "1 settlement account" : `${accounts.length} settlement accounts`;
  const findings = [finding("key", "ok", `${counted}: ${accounts.join(", ")}`)];
  for (const chain of chains) {
    const network = caip2(chain.chainId);
    for (const account of accounts) {
      findings.push(
        await balanceFinding(
          () => chain.client.getBalance({ address: account }),
          LOW_GAS_WEI,
          (balance) => `${account} holds ${nativeBalance(chain, balance)} for gas`,
          `send it some of ${network}'s native token: settlements cost gas`,
          (error) =>
            `${account}'s balance on ${network} could not be read (${unreachableReason(error)})`,
        ),
      );
    }
  }
  return findings;
}

/** A gas balance read: none is an error, below `low` a warning; a failed read, unreachable. */
export async function balanceFinding(
  read: () => Promise<bigint>,
  low: bigint,
  holds: (balance: bigint) => string,
  fix: string,
  unread: (error: unknown) => string,
): Promise<Finding> {
  try {
    const balance = await read();
    const level: Level = balance === 0n ? "error" : balance < low ? "warning" : "ok";
    return finding("key", level, holds(balance), level === "ok" ? undefined : fix);
  } catch (error) {
    return finding("key", "unreachable", unread(error));
  }
}

/** "9999.9994 ETH on eip155:1": to 4 decimals, with the symbol where it is known (a devnet's: ETH). */
function nativeBalance(chain: ChainSeen, wei: bigint): string {
  const symbol = knownNetwork(chain.chainId)?.native ?? (chain.devnet ? "ETH" : undefined);
  const amount = gasAmount(wei, 18);
  return symbol
    ? `${amount} ${symbol} on ${caip2(chain.chainId)}`
    : `${amount} of ${caip2(chain.chainId)}'s native token`;
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
      return [
        finding(
          "journal",
          "error",
          `${file} belongs to a devnet that has stopped (the RPC for ${caip2(marker.chainId)} serves another chain now)`,
          "source the running devnet's devnet.env, or pass --journal FILE",
        ),
      ];
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
