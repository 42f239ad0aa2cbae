/** The Facilitator a command runs on, from its configuration. */
import type { LocalAccount } from "viem";
import { privateKeyToAddress } from "viem/accounts";
import type { MetricsSink } from "../../core/metrics.js";
import type { SettlementStore } from "../../core/store.js";
import { settlementAccount } from "../../evm/chain/secp256k1.js";
import { EVM_SCHEMES } from "../../evm/schemes.js";
import { Facilitator } from "../../facilitator.js";
import type { SignerWait } from "../../store/postgres-leases.js";
import { UsageError } from "../io/errors.js";
import { warn } from "../io/output.js";
import { goneDevnetDir, staleDevnetMessage } from "../io/stale-devnet.js";
import { describeSignerWait, signersLeasedError } from "../locks/store-leases.js";
import { type CliConfig, schemeOptions } from "../settings/config.js";
import { keysOrNone, receiverAuthorizerOf } from "../settings/config-keys.js";
import { readDenyList } from "../settings/deny-list-file.js";
import { checkDevnetJournal } from "./devnet-marker.js";
import type { SendingDoor } from "./sending-door.js";
import { WatchedJournal } from "./watched-journal.js";

type FacilitatorFromOptions = {
  server?: boolean;
  /** serve's metrics: what the chain code reports, and how long each store query took. */
  metrics?: (MetricsSink & { observeStore(op: string, seconds: number): void }) | undefined;
  /** Without signing: still read the journal or store (status), never compacting the file. */
  store?: boolean;
  /** /supported offers the receiver authorizer (refund requests are authenticated). */
  offerReceiverAuthorizer?: boolean;
  /** Told at once when another process's lease on a key is waited out (default: a line on stderr). */
  onSignerWait?: (wait: SignerWait, store: string) => void;
  /** serve's door to new broadcasts, shut when its stop's time is up; settle's pool gate. */
  door?: Pick<SendingDoor, "guard">;
  /** The PostgreSQL store's owner name, when not this process's. */
  storeOwner?: string | undefined;
};

/** The RPC registry's options: every command reaches its chains the same way. */
export const registryOptions = (config: CliConfig) => ({
  rpcUrls: config.rpcUrls,
  useDefaultRpcs: config.publicRpcs,
  rpcBatchLimit: config.rpcBatchLimit,
});

/** At a command's end: its answers written down as given, a shared store's key leases given up now. */
export async function finish(facilitator: Facilitator): Promise<void> {
  await facilitator.answers.flush();
  if (facilitator.journal.shared) await facilitator.journal.close();
}

/** `signing`: keys and journal too. A bad deny list stops the command before anything else. */
export async function facilitatorFrom(
  config: CliConfig,
  signing: boolean,
  options: FacilitatorFromOptions = {},
): Promise<Facilitator> {
  const rpc = {
    ...registryOptions(config),
    denyList: config.denyList === undefined ? undefined : readDenyList(config.denyList).list,
    erc6492Factories: config.erc6492Factories,
    metrics: options.metrics,
    // Verify needs the Solana fee payers too: a payment names the one it expects.
    svmFeePayers: config.loadSvmFeePayers(),
    svmMaxFeeLamports: config.svmMaxFeeLamports,
    svmSmartWallets: config.svmSmartWallets,
    builderCode: config.builderCode ? { code: config.builderCode } : undefined,
  };
  if (!signing && options.store) {
    const journal = config.storeUrl
      ? await openPostgres(config, [], options)
      : openJournal(config.journalPath, { compactAfterLines: Number.POSITIVE_INFINITY });
    return new Facilitator({ ...rpc, journal });
  }
  if (!signing) {
    // Verify signs nothing: our keys only for their addresses, derived if needed (~15 ms cold).
    const settlementAddresses = () =>
      keysOrNone(config.loadPrivateKeys).map((key) => privateKeyToAddress(key));
    return new Facilitator({ ...rpc, settlementAddresses });
  }
  const keys = config.loadPrivateKeys();
  const signers = keys.map((key) => settlementAccount(key));
  const receiverAuthorizer = receiverAuthorizerOf(config.loadReceiverAuthorizerKey(), keys);
  const opened = config.storeUrl
    ? await openPostgres(config, signers, options)
    : openJournal(config.journalPath, {
        // 0 keeps every archive segment, as it keeps every PostgreSQL row.
        retainDays: config.retainDays > 0 ? config.retainDays : undefined,
      });
  const journal = options.door ? options.door.guard(opened) : opened;
  const facilitator = new Facilitator({
    ...rpc,
    signers,
    receiverAuthorizer,
    offerReceiverAuthorizer: options.offerReceiverAuthorizer === true,
    journal,
    confirmTimeoutMs: config.confirmTimeoutMs,
    confirmations: config.confirmations,
    payerRevertLimit: config.payerRevertLimit,
    payerRevertWindowMs: config.payerRevertWindowMs,
    ...config.limits,
    replaceAfterMs: config.replaceAfterMs,
    minAmounts: config.minAmounts,
    // Counted per process: a one-shot command settles one payment.
    ratePerPayer: options.server ? config.ratePerPayer : undefined,
    watchSubmitted: options.server === true,
    // The schemes' own settings, made into their options (a one-shot command is no server).
    ...schemeOptions(EVM_SCHEMES, config.schemes, { server: options.server === true }),
  });
  if (!config.storeUrl) await checkDevnetJournal(config.journalPath, facilitator);
  return facilitator;
}

function openJournal(
  file: string,
  options?: { compactAfterLines?: number; retainDays?: number | undefined },
): WatchedJournal {
  // The journal's directory is made when missing, but not a stopped devnet's again.
  const gone = goneDevnetDir(file);
  if (gone) throw new UsageError(staleDevnetMessage(gone));
  try {
    return new WatchedJournal(file, { ...options, warn });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? "unusable";
    throw new UsageError(`cannot open the settlement journal ${file} (${code})`);
  }
}

/** The PostgreSQL store; a signer leased by another process and not freed in time: key_in_use. */
async function openPostgres(
  config: CliConfig,
  signers: readonly LocalAccount[],
  options: FacilitatorFromOptions,
): Promise<SettlementStore> {
  const { PostgresStore, redactStoreUrl } = await import("../../store/postgres.js");
  const { SignersLeased } = await import("../../store/postgres-leases.js");
  const url = config.storeUrl as string;
  const store = redactStoreUrl(url);
  const onSignerWait = options.onSignerWait ?? ((wait, at) => warn(describeSignerWait(wait, at)));
  try {
    return await PostgresStore.open(url, {
      signers: signers.map((s) => s.address),
      leaseMs: config.storeLeaseMs,
      retainDays: config.retainDays,
      onQuery: options.metrics && ((op, seconds) => options.metrics?.observeStore(op, seconds)),
      onSignerWait: (wait) => onSignerWait(wait, store),
      owner: options.storeOwner,
    });
  } catch (error) {
    if (error instanceof SignersLeased) {
      throw signersLeasedError(error, store, options.server === true);
    }
    const text = error instanceof Error ? error.message : String(error);
    throw new UsageError(`cannot use the store ${store}: ${text}`);
  }
}
