/** doctor's disk check: a journal that cannot be written has every settle refused with 503. */
import { existsSync } from "node:fs";
import path from "node:path";
import { describeDisk, diskOf, probeRoom } from "../../../store/journal-space.js";
import { type Finding, finding } from "./doctor-checks.js";

/** Below this much room, a warning: about 60,000 settlements of about 1.7 KB each. */
const LOW_BYTES = 100 * 1024 ** 2;
const RECORD_BYTES = 1_700;

export async function checkJournalDisk(file: string): Promise<Finding[]> {
  // A directory not made yet is the journal check's to report.
  if (!existsSync(path.dirname(file))) return [];
  const refused = await probeRoom(file);
  const disk = diskOf(file);
  const where = disk ? describeDisk(disk) : `the file system holding ${path.dirname(file)}`;
  if (refused !== undefined) {
    const message = `${file} cannot be written on ${where}: ${refused}; every settle is refused (503 store_unavailable) until it can be`;
    const fix = `free space on that file system (settles resume by themselves), or pass --journal FILE on another`;
    return [finding("journal", "error", message, fix)];
  }
  if (disk && disk.freeBytes < LOW_BYTES) {
    const room = Math.floor(disk.freeBytes / RECORD_BYTES);
    const message = `${file} is on ${where}: room for about ${room.toLocaleString("en-US")} more settlements`;
    const fix = "free space on that file system before it fills: then every settle is refused";
    return [finding("journal", "warning", message, fix)];
  }
  return [];
}
