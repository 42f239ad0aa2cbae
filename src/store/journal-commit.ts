/**
 * The journal's group commit: lines appended while a group is on its way go out in one write and
 * one fdatasync, in order (O_DSYNC: one trip to the thread pool). A write cut short is cut back
 * to before its group, so no torn line is left; failing that, the next group starts with "\n".
 */
import { constants, fdatasync, fstatSync, ftruncate, write } from "node:fs";
import { promisify } from "node:util";
import { markNotRecorded, STORE_RETRY_AFTER_SECONDS } from "../core/store.js";
import { FacilitatorError } from "../protocol/errors.js";
import { firstLine } from "../protocol/words.js";

/** Writes `length` bytes of `buffer` from `offset`; resolves with how many it wrote. */
export type WriteBytes = (
  fd: number,
  buffer: Buffer,
  offset: number,
  length: number,
) => Promise<number>;

const writeBytes: WriteBytes = async (fd, buffer, offset, length) =>
  (await promisify(write)(fd, buffer, offset, length, null)).bytesWritten;
const sync = promisify(fdatasync);

/** Appends are durable when their write returns (O_DSYNC) where the platform has it. */
const SYNCED_WRITES = constants.O_DSYNC !== undefined;

/** Why a group was not written: the cause, and whether the file was cut back to before it. */
export class GroupNotWritten extends Error {
  override readonly name = "GroupNotWritten";
  constructor(
    override readonly cause: unknown,
    /** True when the file holds nothing of the group (cut back, or nothing written at all). */
    readonly cutBack: boolean,
    /** How big the group was. */
    readonly bytes = 0,
  ) {
    super(firstLine(cause));
  }
}

/** An unwritable journal is an unavailable store (503, Retry-After), not a failed payment. */
export function unwritable(error: GroupNotWritten): FacilitatorError {
  const thrown = FacilitatorError.of(
    "store_unavailable",
    `the settlement journal cannot be written (${error.message}); nothing was sent`,
    { retryAfterSeconds: STORE_RETRY_AFTER_SECONDS },
  );
  return error.cutBack ? markNotRecorded(thrown) : thrown;
}

export class GroupCommit {
  /** The file's descriptor: undefined while it is read, and once it is closed. */
  fd: number | undefined;
  /** Lines appended but not yet handed to the disk, and how many lines were ever appended. */
  #pending: string[] = [];
  #appended = 0;
  #waiters: { upTo: number; resolve: () => void; reject: (error: unknown) => void }[] = [];
  #pumping = false;
  /** The file's length after the last group written whole (read once, then counted). */
  #length: { fd: number; bytes: number } | undefined;
  /** The file may end mid-line (a failed group could not be cut back): the next group ends it first. */
  torn = false;
  /** Why the last group failed, until a group (or a probe beside the file) is written whole again. */
  failure: GroupNotWritten | undefined;
  /** The group being written now, and what holds the next one back (exclusive). */
  #writing: Promise<unknown> = Promise.resolve();
  #held: Promise<unknown> | undefined;

  /** Only tests pass their own `write`: one that stops short where no small disk can be mounted. */
  constructor(private readonly write: WriteBytes = writeBytes) {}

  /** Appends whole lines; resolves once on disk, else rejects `store_unavailable`. */
  append(text: string): Promise<void> {
    this.#pending.push(text);
    const upTo = ++this.#appended;
    const durable = new Promise<void>((resolve, reject) => {
      this.#waiters.push({ upTo, resolve, reject });
    });
    if (!this.#pumping) void this.#pump();
    return durable;
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    try {
      while (this.#pending.length > 0) {
        // Lines appended in this turn of the event loop join the group.
        await new Promise((resolve) => setImmediate(resolve));
        while (this.#held) await this.#held;
        const fd = this.fd;
        const text = this.#pending.join("");
        const upTo = this.#appended;
        this.#pending = [];
        // Set before any await: a compaction's exclusive() waits for this group.
        const writing =
          fd === undefined
            ? Promise.resolve(new GroupNotWritten(new Error("the journal is closed"), true))
            : this.#writeGroup(fd, text);
        this.#writing = writing;
        const failure = await writing;
        // A small group going through says little of room: the failure lasts until one as big does.
        if (failure && fd !== undefined) this.failure = failure;
        else if (Buffer.byteLength(text) >= (this.failure?.bytes ?? 0)) this.failure = undefined;
        this.#settleWaiters(upTo, failure && unwritable(failure));
      }
    } finally {
      this.#pumping = false;
    }
  }

  /** Writes one group whole and syncs it; on any failure cuts the file back to before it. */
  async #writeGroup(fd: number, text: string): Promise<GroupNotWritten | undefined> {
    const bytes = Buffer.from(this.torn ? `\n${text}` : text);
    let before: number;
    try {
      before = this.#lengthOf(fd);
    } catch (error) {
      return new GroupNotWritten(error, true);
    }
    let written = 0;
    try {
      while (written < bytes.length) {
        const wrote = await this.write(fd, bytes, written, bytes.length - written);
        // A regular file takes at least a byte or says why not; never loop on nothing.
        if (!(wrote > 0)) throw new Error(`wrote ${written} of ${bytes.length} bytes`);
        written += wrote;
      }
      if (!SYNCED_WRITES) await sync(fd);
      this.#length = { fd, bytes: before + bytes.length };
      this.torn = false;
      return undefined;
    } catch (error) {
      const cause =
        written > 0 && error instanceof Error
          ? new Error(`${firstLine(error)} (wrote ${written} of ${bytes.length} bytes)`, {
              cause: error,
            })
          : error;
      const cutBack = written === 0 || (await cut(fd, before));
      // Nothing of it may stay on disk without its newline: the next record would be glued to it.
      if (!cutBack) {
        this.torn = true;
        this.#length = undefined;
      }
      return new GroupNotWritten(cause, cutBack, bytes.length);
    }
  }

  /** Runs `task` between groups (a compaction's cut and swap); appends wait meanwhile. */
  async exclusive<T>(task: () => Promise<T>): Promise<T> {
    while (this.#held) await this.#held.catch(() => undefined);
    const running = (async () => {
      await this.#writing.catch(() => undefined);
      return task();
    })();
    this.#held = running.catch(() => undefined);
    try {
      return await running;
    } finally {
      this.#held = undefined;
    }
  }

  #lengthOf(fd: number): number {
    if (this.#length?.fd !== fd) this.#length = { fd, bytes: fstatSync(fd).size };
    return this.#length.bytes;
  }

  #settleWaiters(upTo: number, error?: unknown): void {
    // Waiters are in append order.
    while ((this.#waiters[0]?.upTo ?? Number.POSITIVE_INFINITY) <= upTo) {
      const waiter = this.#waiters.shift();
      if (error === undefined) waiter?.resolve();
      else waiter?.reject(error);
    }
  }
}

/** Truncates the file back to `length` and syncs that: true when it worked. */
const cut = (fd: number, length: number): Promise<boolean> =>
  promisify(ftruncate)(fd, length)
    .then(() => sync(fd))
    .then(
      () => true,
      () => false,
    );
