/** litesvm as a node: it takes only its latest blockhash, so the clock checks the 150-block window
 * here; a landed message is `AlreadyProcessed`, in simulation too. */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Address,
  getBase58Decoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  getTransactionEncoder,
} from "@solana/kit";
import { FailedTransactionMetadata, LiteSVM, type TransactionMetadata } from "litesvm";
import { SlotClock } from "./clock.js";
import { LAMPORTS_PER_SIGNATURE, transactionFee } from "./fees.js";
import { type RpcTransactionError, rpcTransactionError } from "./tx-error.js";

const SNAPSHOT = "svm-state.bin";
const SIDECAR = "svm-cluster.json";
const SAVED_BIGINTS = new Set(["slot", "unitsConsumed", "fee"]);
/** Entries of the SlotHashes sysvar a node keeps. */
const SLOT_HASHES_KEPT = 512;
const base58 = getBase58Decoder();

interface Execution {
  err: RpcTransactionError | null;
  logs: string[];
  unitsConsumed: bigint;
  innerInstructions: unknown[];
}

/** What the cluster keeps about a transaction that landed (successfully or not); `wire` is base64. */
type Landed = Execution & {
  signature: string;
  slot: bigint;
  blockTime: number;
  fee: bigint;
  wire: string;
};

/** A transaction the node would refuse before it lands (no status is ever recorded). */
export class Rejected extends Error {
  constructor(readonly err: RpcTransactionError) {
    super(typeof err === "string" ? err : JSON.stringify(err));
  }
}

/** Errors a node drops a transaction for rather than recording a failed one on chain. */
const NOT_LANDED = new Set(
  (
    "AccountNotFound InsufficientFundsForFee InvalidAccountForFee AlreadyProcessed " +
    "BlockhashNotFound SignatureFailure SanitizeFailure MissingSignatureForFee UnsupportedVersion " +
    "AccountLoadedTwice TooManyAccountLocks"
  ).split(" "),
);

type DecodedTransaction = ReturnType<typeof decodeWireTransaction>;

export function decodeWireTransaction(bytes: Uint8Array) {
  const transaction = getTransactionDecoder().decode(bytes);
  const message = getCompiledTransactionMessageDecoder().decode(transaction.messageBytes);
  const first = Object.values(transaction.signatures)[0];
  return {
    transaction,
    signature: first ? base58.decode(first) : null,
    blockhash: message.lifetimeToken as string,
    fee: transactionFee(message),
    messageHash: createHash("sha256")
      .update(Uint8Array.from(transaction.messageBytes))
      .digest("hex"),
  };
}

/** A run that never started. */
function refusedRun(err: RpcTransactionError): Execution {
  return { err, logs: [], unitsConsumed: 0n, innerInstructions: [] };
}

function execution(result: TransactionMetadata | FailedTransactionMetadata | null): Execution {
  if (result === null) return refusedRun("SanitizeFailure");
  const failed = result instanceof FailedTransactionMetadata;
  const meta = failed ? result.meta() : result;
  return {
    err: failed ? rpcTransactionError(result.err()) : null,
    logs: meta.logs(),
    unitsConsumed: meta.computeUnitsConsumed(),
    innerInstructions: meta.innerInstructions().map((list, index) => ({
      index,
      instructions: list.map((inner) => {
        const ix = inner.instruction();
        return {
          programIdIndex: ix.programIdIndex(),
          accounts: Array.from(ix.accounts()),
          data: base58.decode(ix.data()),
          stackHeight: inner.stackHeight(),
        };
      }),
    })),
  };
}

export class SvmCluster {
  readonly svm: LiteSVM;
  readonly clock: SlotClock;
  readonly #landed = new Map<string, Landed>();
  /** sha256(message) → signature, for landed messages. */
  readonly #messages = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;
  /** Whether the state came from a snapshot (setup then is not run again). */
  readonly restored: boolean;

  private constructor(svm: LiteSVM, restored: boolean, slot: bigint) {
    this.svm = svm.withBlockhashCheck(false).withSigverify(true);
    this.restored = restored;
    this.clock = new SlotClock(slot, svm.latestBlockhash());
  }

  /** A fresh cluster, or the one saved in `dir` when there is one. */
  static open(dir?: string): SvmCluster {
    if (dir && existsSync(join(dir, SNAPSHOT)) && existsSync(join(dir, SIDECAR))) {
      // save() wrote these bigints as strings.
      const text = readFileSync(join(dir, SIDECAR), "utf8");
      const saved = JSON.parse(text, (key, value) =>
        SAVED_BIGINTS.has(key) && typeof value === "string" ? BigInt(value) : value,
      ) as { slot: bigint; landed: Landed[]; messages: Array<[string, string]> };
      const cluster = new SvmCluster(LiteSVM.loadFromFile(join(dir, SNAPSHOT)), true, saved.slot);
      for (const entry of saved.landed) cluster.#landed.set(entry.signature, entry);
      for (const [hash, signature] of saved.messages) cluster.#messages.set(hash, signature);
      return cluster;
    }
    return new SvmCluster(new LiteSVM(), false, 0n);
  }

  /** Writes the whole runtime state and the node's memory to `dir` (atomically per file). */
  save(dir: string): void {
    mkdirSync(dir, { recursive: true });
    const snapshot = join(dir, SNAPSHOT);
    this.svm.saveToFile(`${snapshot}.tmp`);
    renameSync(`${snapshot}.tmp`, snapshot);
    const sidecar = {
      slot: this.clock.slot,
      landed: [...this.#landed.values()],
      messages: [...this.#messages],
    };
    const text = JSON.stringify(sidecar, (_, v) => (typeof v === "bigint" ? v.toString() : v));
    writeFileSync(join(dir, `${SIDECAR}.tmp`), text);
    renameSync(join(dir, `${SIDECAR}.tmp`), join(dir, SIDECAR));
  }

  /** Produces a slot every `intervalMs` until stop(). */
  startSlots(intervalMs: number): void {
    this.#timer ??= setInterval(() => this.tick(), intervalMs);
    this.#timer.unref();
  }

  stopSlots(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The next slot; the one ended joins SlotHashes (lookup tables are created only for those). */
  tick(): void {
    const ended = this.clock.slot;
    const endedHash = this.svm.latestBlockhash();
    const clock = this.svm.getClock();
    clock.slot = ended + 1n;
    clock.unixTimestamp = BigInt(Math.floor(Date.now() / 1000));
    this.svm.setClock(clock);
    this.svm.expireBlockhash();
    this.clock.advance(this.svm.latestBlockhash());
    // litesvm makes no SlotHash objects from JS: take one from a second read and rewrite it.
    const earlier = this.svm.getSlotHashes().filter((entry) => entry.slot < ended);
    const [entry] = this.svm.getSlotHashes();
    if (entry === undefined) return;
    entry.slot = ended;
    entry.hash = endedHash;
    this.svm.setSlotHashes([entry, ...earlier].slice(0, SLOT_HASHES_KEPT));
  }

  landed(signature: string): Landed | undefined {
    return this.#landed.get(signature);
  }

  /** Runs a transaction without committing it. */
  simulate(
    tx: DecodedTransaction,
    options: { sigVerify: boolean; checkBlockhash: boolean },
  ): Execution {
    const refused = this.#refusal(tx, options.checkBlockhash);
    if (refused) return refusedRun(refused);
    this.svm.withSigverify(options.sigVerify);
    try {
      const result = this.svm.simulateTransaction(tx.transaction);
      return execution(result instanceof FailedTransactionMetadata ? result : result.meta());
    } catch {
      return refusedRun("SignatureFailure");
    } finally {
      this.svm.withSigverify(true);
    }
  }

  /** Executes and commits at the current slot; Rejected where a node would drop it. */
  send(tx: DecodedTransaction): Landed {
    const refused = this.#refusal(tx, true);
    if (refused) throw new Rejected(refused);
    if (tx.signature === null) throw new Rejected("SignatureFailure");
    let result: TransactionMetadata | FailedTransactionMetadata;
    try {
      result = this.svm.sendTransaction(tx.transaction);
    } catch {
      throw new Rejected("SignatureFailure");
    }
    const run = execution(result);
    if (typeof run.err === "string" && NOT_LANDED.has(run.err)) throw new Rejected(run.err);
    const wire = Buffer.from(getTransactionEncoder().encode(tx.transaction)).toString("base64");
    this.#messages.set(tx.messageHash, tx.signature);
    return this.#record(tx.signature, run, tx.fee, wire);
  }

  #record(signature: string, run: Execution, fee: bigint, wire: string): Landed {
    const landed = {
      signature,
      slot: this.clock.slot,
      blockTime: Math.floor(Date.now() / 1000),
      ...run,
      fee,
      wire,
    };
    this.#landed.set(signature, landed);
    return landed;
  }

  /** Credits lamports as a system transfer from the faucet would; returns a signature. */
  airdrop(address: Address, lamports: bigint): string {
    let result = this.svm.airdrop(address, lamports as never);
    if (
      result instanceof FailedTransactionMetadata &&
      execution(result).err === "AlreadyProcessed"
    ) {
      // litesvm signs airdrops with its latest blockhash: a second one in a slot is a duplicate.
      this.svm.expireBlockhash();
      result = this.svm.airdrop(address, lamports as never);
    }
    const run = execution(result);
    if (result === null || run.err !== null) throw new Rejected(run.err ?? "SanitizeFailure");
    const signature = base58.decode((result as TransactionMetadata).signature());
    this.#record(signature, { ...run, innerInstructions: [] }, LAMPORTS_PER_SIGNATURE, "");
    return signature;
  }

  #refusal(tx: DecodedTransaction, checkBlockhash: boolean): RpcTransactionError | undefined {
    if (this.#messages.has(tx.messageHash)) return "AlreadyProcessed";
    if (checkBlockhash && !this.clock.isBlockhashValid(tx.blockhash)) return "BlockhashNotFound";
    return undefined;
  }
}
