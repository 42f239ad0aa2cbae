/**
 * Builds the CLI into dist/ as one ESM bundle with lazily loaded chunks (serve, devnet). Loading
 * one bundle instead of several hundred modules roughly halves a cold `facilitator verify`.
 */
import { rmSync } from "node:fs";
import { build } from "esbuild";

// BUILD_OUTDIR: bench/profile.ts builds a readable copy beside node_modules, leaving dist/ alone.
const outdir = process.env.BUILD_OUTDIR || "dist";
rmSync(outdir, { recursive: true, force: true });
await build({
  entryPoints: { main: "src/cli/main.ts", "serve-worker": "src/cli/commands/serve-worker.ts" },
  outdir,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  // Smaller source parses faster: this is most of a cold start. BUILD_MINIFY=0 keeps names readable
  // in a CPU profile.
  minify: process.env.BUILD_MINIFY !== "0",
  // secp256k1 loads its native addon, tiny-secp256k1 its WebAssembly file, from their own
  // directories; anvil is found at run time.
  // pg and prom-client load only when serve asks for a PostgreSQL store or metrics. litesvm (the
  // Solana devnet's runtime) loads its native module from its platform package at run time.
  external: ["secp256k1", "tiny-secp256k1", "@foundry-rs/*", "pg", "prom-client", "litesvm"],
  // Some bundled CommonJS code calls require(): give ESM chunks one.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  logLevel: "warning",
});
