#!/usr/bin/env node
// Thin entry: the compiled CLI lives in dist/ (built by `npm run build`, run on install).
import module from "node:module";

module.enableCompileCache?.();
const { main } = await import("../dist/cli/main.js");
const code = await main(process.argv);
process.exit(code);
