#!/usr/bin/env node
// Thin entry: the CLI is bundled into dist/ by `npm run build` (which `npm install` runs).
import module from "node:module";

module.enableCompileCache?.();
const { main } = await import("../dist/main.js");
const code = await main(process.argv);
process.exit(code);
