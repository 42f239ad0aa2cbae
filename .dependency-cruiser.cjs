/**
 * The directions imports may take in src/ (docs/design.md, "Layers and imports", which lists each
 * rule below by name: test/design-doc.test.ts holds the two together), checked by `npm test`:
 *   shells (cli/, http/) → the entry point (facilitator.ts) → chain families (evm/, svm/)
 *   → core/ → the JSON-RPC transport (rpc/), the bazaar (bazaar/), the deny list (deny-list/)
 *   → protocol/; the stores (store/) implement core's port. No circles, type-only imports
 *   included; no family imports another.
 */
const layer = (name, path, mayNotReach, comment) => ({
  name,
  comment,
  severity: "error",
  from: { path },
  to: { path: mayNotReach },
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "Modules that import each other (type-only imports count) cannot be read in order.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    layer(
      "protocol-is-the-floor",
      "^src/protocol/",
      "^src/(?!protocol/)",
      "protocol/ (wire formats, the error table, network names) imports nothing else of ours.",
    ),
    layer(
      "core-names-no-family",
      "^src/core/",
      "^src/(evm|svm|store|http|cli)/|^src/facilitator\\.ts$",
      "The core knows no chain family, no store implementation and no shell.",
    ),
    {
      name: "core-names-no-chain-library",
      comment:
        "The core's types (a settlement's network, sender, nonce, hashes: core/store.ts) are its own: " +
        "no chain library.",
      severity: "error",
      from: { path: "^src/core/" },
      to: { path: "(^|/)node_modules/(viem|@solana/[^/]+)/" },
    },
    layer(
      "core-opens-no-transport",
      "^src/core/",
      "^src/rpc/(?!rpc-errors\\.ts$)",
      "The core reads what a transport's error means (rpc/rpc-errors.ts); the families reach chains.",
    ),
    layer(
      "rpc-is-transport",
      "^src/rpc/",
      "^src/(?!rpc/|protocol/)",
      "rpc/ (JSON-RPC over node:http, per chain) knows protocol/ only; it tells metrics through a port of its own.",
    ),
    layer(
      "bazaar-beside-the-core",
      "^src/bazaar/",
      "^src/(?!bazaar/|protocol/)",
      "bazaar/ (the extension, its catalogue) knows protocol/ only; it reads the store through a port of its own.",
    ),
    layer(
      "deny-list-is-data",
      "^src/deny-list/",
      "^src/(?!deny-list/|protocol/)",
      "The deny list knows protocol/ only: the core and the families ask it about addresses.",
    ),
    layer(
      "stores-implement-the-port",
      "^src/store/",
      "^src/(evm|svm|http|cli)/|^src/facilitator\\.ts$",
      "A store implements core/store.ts; it knows no family and no shell.",
    ),
    layer(
      "evm-is-a-family",
      "^src/evm/",
      "^src/(svm|store|http|cli)/|^src/facilitator\\.ts$",
      "The EVM family uses the core and protocol only.",
    ),
    layer(
      "svm-is-a-family",
      "^src/svm/",
      "^src/(evm|store|http|cli)/|^src/facilitator\\.ts$",
      "The Solana family uses the core and protocol only.",
    ),
    layer(
      "entry-point-below-shells",
      "^src/facilitator\\.ts$",
      "^src/(http|cli)/",
      "The entry point registers families; the shells use it, never the reverse.",
    ),
    layer(
      "http-below-cli",
      "^src/http/",
      "^src/cli/",
      "The HTTP service knows nothing of the CLI.",
    ),
    layer(
      "commands-below-main",
      "^src/cli/(?!main\\.ts$|commands/)",
      "^src/cli/commands/",
      "main.ts alone registers the commands; what they share (settings/, locks/, io/, facilitator/) imports none.",
    ),
    {
      name: "commands-apart",
      comment: "A command's folder (cli/commands/NAME/) imports no other command's.",
      severity: "error",
      from: { path: "^src/cli/commands/([^/]+)/" },
      to: { path: "^src/cli/commands/", pathNot: "^src/cli/commands/$1/" },
    },
    {
      name: "zod-through-one-door",
      comment:
        "Only protocol/zod.ts imports zod: zod/mini, with the English locale set. zod itself (every locale, every method class) was over a third of what a cold verify loaded.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/protocol/zod\\.ts$" },
      to: { path: "(^|/)node_modules/zod/" },
    },
    {
      name: "no-dev-dependencies-in-src",
      comment:
        "What ships may not need a devDependency (npm install -g leaves them out), but those " +
        "scripts/build.ts bundles into dist/; what the bundle loads at run time is a dependency.",
      severity: "error",
      from: { path: "^src/" },
      to: {
        dependencyTypes: ["npm-dev"],
        pathNot: "(^|/)node_modules/(chalk|commander|ora|viem|zod|@x402/evm)/",
      },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    moduleSystems: ["es6"],
  },
};
