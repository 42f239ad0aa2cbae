/**
 * Builds the CLI into dist/ as one ESM bundle with lazily loaded chunks (serve, devnet). Loading
 * one bundle instead of several hundred modules roughly halves a cold `facilitator verify`.
 *
 * A command may start while a build runs (npm test builds first, and `npm pack` builds through
 * prepare): the bundle is written to a folder of its own inside dist/ and moved in file by file,
 * entry points last, before the old build's files go. Chunk names hold a hash of their content,
 * so the two builds' chunks sit side by side meanwhile: a command loads the old build or the new
 * one, never half of one, and never finds main.js missing.
 */
import { mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { setTimeout } from "node:timers/promises";
import { build } from "esbuild";

// BUILD_OUTDIR: bench/profile.ts builds a readable copy beside node_modules, leaving dist/ alone.
const outdir = process.env.BUILD_OUTDIR || "dist";
const ENTRIES = {
  main: "src/cli/main.ts",
  "serve-worker": "src/cli/commands/serve/serve-worker.ts",
};
const STAGING_PREFIX = ".build-";
/**
 * How long the old build's files outlive the new one's arrival when their names differ (the source
 * changed): a command that read the old main.js just before has this long to load its chunks.
 */
const STALE_GRACE_MS = 3_000;
const staging = path.join(outdir, `${STAGING_PREFIX}${process.pid}`);

mkdirSync(staging, { recursive: true });
try {
  await build({
    entryPoints: ENTRIES,
    outdir: staging,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    // Smaller source parses faster: this is most of a cold start. BUILD_MINIFY=0 keeps names
    // readable in a CPU profile.
    minify: process.env.BUILD_MINIFY !== "0",
    // secp256k1 loads its native addon, tiny-secp256k1 its WebAssembly file, from their own
    // directories; anvil is found at run time.
    // pg and prom-client load only when serve asks for a PostgreSQL store or metrics. litesvm (the
    // Solana devnet's runtime) loads its native module from its platform package at run time.
    // These are package.json's dependencies; everything else is bundled (devDependencies).
    external: ["secp256k1", "tiny-secp256k1", "@foundry-rs/*", "pg", "prom-client", "litesvm"],
    // Some bundled CommonJS code calls require(): give ESM chunks one.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
    logLevel: "warning",
  });
  await publish();
} finally {
  rmSync(staging, { recursive: true, force: true });
}

/** Moves the staged build into outdir (chunks, then entry points), then removes the old one's. */
async function publish(): Promise<void> {
  const entries = new Set(Object.keys(ENTRIES).map((name) => `${name}.js`));
  const built = readdirSync(staging);
  const chunks = built.filter((name) => !entries.has(name));
  // rename() replaces a file in one step: main.js is the old one or the new one, never absent.
  for (const name of [...chunks, ...entries]) {
    renameSync(path.join(staging, name), path.join(outdir, name));
  }
  const kept = new Set(built);
  const stale = readdirSync(outdir).filter((name) => !kept.has(name) && !buildingNow(name));
  if (stale.length > 0) await setTimeout(STALE_GRACE_MS);
  for (const name of stale) rmSync(path.join(outdir, name), { recursive: true, force: true });
}

/** Whether `name` is the staging folder of a build still running (ours, or another at once). */
function buildingNow(name: string): boolean {
  if (!name.startsWith(STAGING_PREFIX)) return false;
  const pid = Number(name.slice(STAGING_PREFIX.length));
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, another user's. ESRCH: a build that was killed left it behind.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
