/**
 * The disk under the journal: after a failed write, `/readyz` and `doctor` probe it, so an idle
 * replica comes back by itself once space is freed.
 */
import { statfsSync, statSync } from "node:fs";
import { open, unlink } from "node:fs/promises";
import path from "node:path";
import { firstLine } from "../protocol/words.js";

/** What a probe writes: room for some forty settlement records (about 1.4 KB each). */
const PROBE_BYTES = 64 * 1024;

/** The file system holding `file`: where it is mounted, its room; undefined where it cannot be asked. */
export function diskOf(file: string) {
  try {
    let dir = path.dirname(path.resolve(file));
    const device = statSync(dir).dev;
    for (let up = path.dirname(dir); up !== dir && statSync(up).dev === device; ) {
      dir = up;
      up = path.dirname(dir);
    }
    const fs = statfsSync(dir);
    return { mount: dir, freeBytes: fs.bavail * fs.bsize, sizeBytes: fs.blocks * fs.bsize };
  } catch {
    return undefined;
  }
}

/** "the file system mounted at /x (12 KiB free of 1.0 MiB)". */
export function describeDisk(disk: NonNullable<ReturnType<typeof diskOf>>): string {
  return `the file system mounted at ${disk.mount} (${bytes(disk.freeBytes)} free of ${bytes(disk.sizeBytes)})`;
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(0)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(1)} GiB`;
}

/** After a write to `file` failed (`why`): undefined once a probe goes through, else what /readyz says. */
export async function stillUnwritable(file: string, why: string): Promise<string | undefined> {
  if ((await probeRoom(file)) === undefined) return undefined;
  const disk = diskOf(file);
  return `cannot write the journal (${why})${disk ? `: ${describeDisk(disk)}` : ""}`;
}

/** Writes, syncs and removes a probe beside `file`: undefined when it went through, else why not. */
export async function probeRoom(file: string): Promise<string | undefined> {
  const probe = `${file}.probe-${process.pid}`;
  try {
    const handle = await open(probe, "w", 0o600);
    try {
      const { bytesWritten } = await handle.write(Buffer.alloc(PROBE_BYTES, 0x20));
      if (bytesWritten < PROBE_BYTES) return `wrote ${bytesWritten} of ${PROBE_BYTES} bytes`;
      await handle.datasync();
    } finally {
      await handle.close();
    }
    return undefined;
  } catch (error) {
    return firstLine(error);
  } finally {
    await unlink(probe).catch(() => undefined);
  }
}
