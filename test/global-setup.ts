/**
 * Every test process (and every CLI or server it starts) keeps its default state, the settlement
 * journal among it, in a temporary directory: never in the user's ~/.local/state.
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export default function setup(): () => void {
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-test-state-"));
  process.env.XDG_STATE_HOME = dir;
  // file-setup.ts makes each file's directory here, also when a worker runs many files.
  process.env.FACILITATOR_TEST_STATE_ROOT = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}
