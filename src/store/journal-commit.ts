/**
 * The journal file's group commit: every line appended while the previous group was on its way to
 * the disk goes out in one write and one fdatasync, on libuv's thread pool, so the event loop
 * keeps serving while the disk works. Lines are written in the order they were appended. A file
 * opened with O_DSYNC (`syncedWrites`) is on disk when its write returns: one trip to the thread
 * pool per group instead of two.
 */
import { fdatasync, write } from "node:fs";

export class GroupCommit {
  /** The file's descriptor now; undefined once it is closed. */
  readonly #fd: () => number | undefined;
  /** Lines appended but not yet handed to the disk, and how many lines were ever appended. */
  #pending: string[] = [];
  #appended = 0;
  #waiters: { upTo: number; resolve: () => void; reject: (error: unknown) => void }[] = [];
  #pumping = false;
  readonly #syncedWrites: boolean;

  constructor(fd: () => number | undefined, options: { syncedWrites?: boolean } = {}) {
    this.#fd = fd;
    this.#syncedWrites = options.syncedWrites ?? false;
  }

  /** Appends `text` (whole lines); resolves once it is on disk. */
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
        const fd = this.#fd();
        const text = this.#pending.join("");
        const upTo = this.#appended;
        this.#pending = [];
        try {
          if (fd === undefined) throw new Error("the journal is closed");
          await new Promise<void>((resolve, reject) =>
            write(fd, text, (error) => (error ? reject(error) : resolve())),
          );
          if (!this.#syncedWrites) {
            await new Promise<void>((resolve, reject) =>
              fdatasync(fd, (error) => (error ? reject(error) : resolve())),
            );
          }
          this.#settleWaiters(upTo);
        } catch (error) {
          this.#settleWaiters(upTo, error);
        }
      }
    } finally {
      this.#pumping = false;
    }
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
