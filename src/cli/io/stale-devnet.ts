/** A devnet.env whose devnet stopped and removed its files: say so, not "no such file". */
import { existsSync } from "node:fs";
import path from "node:path";

/** How a temporary devnet's directory is named (devnet.ts makes it with mkdtemp). */
export const DEVNET_DIR_PREFIX = "facilitator-devnet-";

/** The devnet directory `file` lies in, when that directory is gone; otherwise undefined. */
export function goneDevnetDir(file: string): string | undefined {
  for (let dir = path.dirname(path.resolve(file)); path.dirname(dir) !== dir; ) {
    if (path.basename(dir).startsWith(DEVNET_DIR_PREFIX)) {
      return existsSync(dir) ? undefined : dir;
    }
    dir = path.dirname(dir);
  }
  return undefined;
}

export const STALE_DEVNET_FIX = "source the devnet.env the running devnet printed";

export function staleDevnetProblem(dir: string): string {
  return `this devnet.env belongs to a devnet that has stopped (${dir} is gone)`;
}

export function staleDevnetMessage(dir: string): string {
  return `${staleDevnetProblem(dir)}: ${STALE_DEVNET_FIX}`;
}
