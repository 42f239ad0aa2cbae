/**
 * Each test file gets a state directory of its own (under the run's, see global-setup.ts): the
 * default journal and the settlement-key locks of the CLIs and servers it starts live there. Test
 * files run in parallel, each with a devnet whose settlement key is the same anvil account; in
 * one directory their processes would wait for each other's key, or refuse to start.
 */
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";

// From the run's root, not from XDG_STATE_HOME: a worker runs many files (isolate: false), and
// this runs again before each, which would nest each file's directory in the last one's.
const root = process.env.FACILITATOR_TEST_STATE_ROOT ?? process.env.XDG_STATE_HOME ?? os.tmpdir();
process.env.XDG_STATE_HOME = mkdtempSync(path.join(root, "file-"));
