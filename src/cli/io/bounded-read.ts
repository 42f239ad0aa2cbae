/** The one way the CLI reads inputs: size-limited; pipes, FIFOs and devices with idle timeout. */
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from "node:fs";
import { resolveSetting } from "../settings/setting-resolver.js";
import { SETTINGS } from "../settings/settings.js";
import { UsageError } from "./errors.js";
import { goneDevnetDir, staleDevnetMessage } from "./stale-devnet.js";

/** A request body (and `--requirements`): far above any payment, far below trouble. */
export const REQUEST_LIMIT_BYTES = 1024 * 1024;
/** Key files, the config file, the API key file. */
export const SMALL_FILE_LIMIT_BYTES = 64 * 1024;

export interface ReadLimits {
  readonly maxBytes: number;
  /** Longest wait for the next bytes from a pipe, FIFO, device or stdin; 0: no limit. */
  readonly idleTimeoutMs: number;
}

/** How long a read waits for the next bytes (settings.ts's inputTimeout; 0 waits forever). */
export function inputTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  return resolveSetting(SETTINGS.inputTimeout, { env });
}

/** Why a read failed, worded to follow "cannot read X: ". Never the content. */
export class InputError extends UsageError {
  constructor(readonly reason: string) {
    super(reason);
  }
}

const tooLarge = (limit: number) => new InputError(`it is over the ${limit}-byte limit`);
const timedOut = (ms: number) =>
  new InputError(
    `nothing arrived for ${ms / 1000} s (a pipe or FIFO with no writer?); ${SETTINGS.inputTimeout.env} sets the wait`,
  );

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Blocks this thread for `ms`: the synchronous read's wait between polls. */
const sleep = (ms: number) => Atomics.wait(sleeper, 0, 0, ms);

const ERRNO_WORDS: Record<string, string> = {
  ENOENT: "no such file",
  EISDIR: "it is a directory",
  EACCES: "permission denied",
  EPERM: "permission denied",
  ENXIO: "it is a socket or a device with nothing behind it",
};

/** "no such file (ENOENT)": words for people, the code for searching. */
function describeErrno(code: string | undefined): string {
  if (code === undefined) return "unreadable";
  const words = ERRNO_WORDS[code];
  return words ? `${words} (${code})` : code;
}

/** Reads a whole file, FIFO or device within `limits`; InputError never quotes the content. */
export function readPathBounded(path: string, limits: ReadLimits): Buffer {
  return withOpened(path, (fd, stat) => {
    if (stat.isFile() && stat.size > limits.maxBytes) throw tooLarge(limits.maxBytes);
    return readFd(fd, stat.isFIFO(), limits);
  });
}

/** Opens `path` non-blocking, refuses a directory, hands `read` the fd and its fstat, closes. */
function withOpened<T>(path: string, read: (fd: number, stat: Stats) => T): T {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    throw new InputError(describeErrno((error as NodeJS.ErrnoException).code));
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw new InputError(describeErrno("EISDIR"));
    return read(fd, stat);
  } finally {
    closeSync(fd);
  }
}

/** A regular file's text within `maxBytes`, never waiting: anything else is refused at once. */
export function readRegularFile(path: string, maxBytes: number, what: string) {
  try {
    return withOpened(path, (fd, stat) => {
      if (!stat.isFile())
        throw new InputError("it is not a regular file (a pipe, FIFO or device?)");
      if (stat.size > maxBytes) throw tooLarge(maxBytes);
      const bytes = readFd(fd, false, { maxBytes, idleTimeoutMs: 0 });
      return { text: bytes.toString("utf8"), modifiedMs: stat.mtimeMs };
    });
  } catch (error) {
    if (error instanceof InputError) throw new UsageError(`cannot read ${what}: ${error.reason}`);
    throw error;
  }
}

function readFd(fd: number, fifo: boolean, limits: ReadLimits): Buffer {
  const chunks: Buffer[] = [];
  let size = 0;
  let lastData = Date.now();
  let pause = 1;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(64 * 1024, limits.maxBytes + 1 - size));
    let n: number;
    try {
      n = readSync(fd, chunk, 0, chunk.length, null);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "EAGAIN" && code !== "EWOULDBLOCK") throw new InputError(describeErrno(code));
      n = -1; // a writer is there, nothing written yet
    }
    if (n > 0) {
      chunks.push(chunk.subarray(0, n));
      size += n;
      if (size > limits.maxBytes) throw tooLarge(limits.maxBytes);
      lastData = Date.now();
      pause = 1;
      continue;
    }
    // 0 is the end, except from a FIFO before anything came: then no writer has opened it yet.
    if (n === 0 && !(fifo && size === 0)) return Buffer.concat(chunks, size);
    if (limits.idleTimeoutMs > 0 && Date.now() - lastData >= limits.idleTimeoutMs) {
      throw timedOut(limits.idleTimeoutMs);
    }
    sleep(pause);
    pause = Math.min(pause * 2, 50);
  }
}

/** Reads stdin to its end within `limits`; never waits on a terminal. */
export async function readStdinBounded(limits: ReadLimits): Promise<Buffer> {
  const stdin = process.stdin;
  if (stdin.isTTY) throw new UsageError("no input: pass a FILE, or pipe the JSON request on stdin");
  const { maxBytes, idleTimeoutMs } = limits;
  const chunks: Buffer[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  // Each chunk restarts the wait; stdin idle that long is destroyed with the reason.
  const arm = () => {
    clearTimeout(timer);
    if (idleTimeoutMs <= 0) return;
    timer = setTimeout(() => stdin.destroy(timedOut(idleTimeoutMs)), idleTimeoutMs);
  };
  try {
    arm();
    for await (const chunk of stdin as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw tooLarge(maxBytes);
      chunks.push(chunk);
      arm();
    }
    return Buffer.concat(chunks, size);
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError(describeErrno((error as NodeJS.ErrnoException).code));
  } finally {
    clearTimeout(timer);
  }
}

/** A small file (config, key, API key file) as text; the error names `what`, never the content. */
export function readSmallFile(path: string, what: string, env: NodeJS.ProcessEnv): string {
  try {
    const limits = { maxBytes: SMALL_FILE_LIMIT_BYTES, idleTimeoutMs: inputTimeoutMs(env) };
    return readPathBounded(path, limits).toString("utf8");
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    const gone = goneDevnetDir(path);
    throw new UsageError(`cannot read ${what}: ${gone ? staleDevnetMessage(gone) : error.reason}`);
  }
}
