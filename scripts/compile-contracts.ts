/**
 * Compiles the devnet's Solidity contracts (src/evm/devnet/contracts/*.sol) with the `solc` npm
 * package and writes src/evm/devnet/artifacts.ts (ABIs as `as const` literals, creation and runtime
 * bytecode, the solc version and a hash of the sources).
 *
 * Run with `npm run contracts` (or `npx tsx scripts/compile-contracts.ts`).
 * `compileContracts()` is also used by a test to check that the committed artifacts are fresh.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import solc from "solc";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CONTRACTS_DIR = path.join(ROOT, "src/evm/devnet/contracts");
export const ARTIFACTS_PATH = path.join(ROOT, "src/evm/devnet/artifacts.ts");

/** The contracts whose artifacts are written, in this order. */
const CONTRACTS = [
  { file: "TestUSDC.sol", contract: "TestUSDC", prefix: "testUsdc" },
  { file: "Multicall3.sol", contract: "Multicall3", prefix: "multicall3" },
  { file: "TestERC1271Wallet.sol", contract: "TestERC1271Wallet", prefix: "testErc1271Wallet" },
  { file: "Permit2.sol", contract: "Permit2", prefix: "permit2" },
  {
    file: "X402ExactPermit2Proxy.sol",
    contract: "X402ExactPermit2Proxy",
    prefix: "x402ExactPermit2Proxy",
  },
  {
    file: "X402UptoPermit2Proxy.sol",
    contract: "X402UptoPermit2Proxy",
    prefix: "x402UptoPermit2Proxy",
  },
  { file: "TestPermitToken.sol", contract: "TestPermitToken", prefix: "testPermitToken" },
  { file: "TestPlainToken.sol", contract: "TestPlainToken", prefix: "testPlainToken" },
  { file: "TestGasBurnerToken.sol", contract: "TestGasBurnerToken", prefix: "testGasBurnerToken" },
  {
    file: "TestGasBurnerWallet.sol",
    contract: "TestGasBurnerWallet",
    prefix: "testGasBurnerWallet",
  },
  { file: "TestSmartWalletFactory.sol", contract: "TestSmartWallet", prefix: "testSmartWallet" },
  {
    file: "TestSmartWalletFactory.sol",
    contract: "TestSmartWalletFactory",
    prefix: "testSmartWalletFactory",
  },
  {
    file: "X402BatchSettlement.sol",
    contract: "X402BatchSettlement",
    prefix: "x402BatchSettlement",
  },
  {
    file: "ERC3009DepositCollector.sol",
    contract: "ERC3009DepositCollector",
    prefix: "erc3009DepositCollector",
  },
  {
    file: "Permit2DepositCollector.sol",
    contract: "Permit2DepositCollector",
    prefix: "permit2DepositCollector",
  },
] as const;

/** Sources that only others import (abstract bases): compiled, hashed, no artifacts. */
const SHARED_SOURCES = [
  "DevnetERC20.sol",
  "X402Permit2ProxyBase.sol",
  "X402DepositCollectorBase.sol",
  "X402BatchSignatures.sol",
] as const;

/** Every source file, in the order they are hashed. */
const SOURCE_FILES: readonly string[] = [
  ...new Set([...CONTRACTS.map((c) => c.file), ...SHARED_SOURCES]),
];

type Hex = `0x${string}`;

export interface CompiledContract {
  contract: string;
  prefix: string;
  abi: unknown[];
  bytecode: Hex;
  runtimeBytecode: Hex;
}

export interface CompiledContracts {
  solcVersion: string;
  sourceHash: Hex;
  contracts: CompiledContract[];
}

interface SolcError {
  severity: "error" | "warning" | "info";
  formattedMessage: string;
}

interface SolcOutput {
  errors?: SolcError[];
  contracts?: Record<
    string,
    Record<
      string,
      {
        abi: unknown[];
        evm: { bytecode: { object: string }; deployedBytecode: { object: string } };
      }
    >
  >;
}

/** sha256 of the sources concatenated in the order of SOURCE_FILES. */
export function hashSources(sources: readonly string[]): Hex {
  const hash = createHash("sha256");
  for (const source of sources) hash.update(source, "utf8");
  return `0x${hash.digest("hex")}`;
}

export function compileContracts(): CompiledContracts {
  const sources = SOURCE_FILES.map((file) => readFileSync(path.join(CONTRACTS_DIR, file), "utf8"));
  const input = {
    language: "Solidity",
    sources: Object.fromEntries(SOURCE_FILES.map((file, i) => [file, { content: sources[i] }])),
    settings: {
      evmVersion: "cancun",
      optimizer: { enabled: true, runs: 200 },
      // No IPFS/Swarm hash of the metadata in the bytecode: the bytecode then depends on the code
      // only, not on comments or file names (sourceHash covers those).
      metadata: { bytecodeHash: "none" },
      outputSelection: {
        "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] },
      },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  for (const warning of (output.errors ?? []).filter((e) => e.severity !== "error")) {
    process.stderr.write(warning.formattedMessage);
  }
  if (errors.length > 0) {
    throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join("\n")}`);
  }
  const contracts = CONTRACTS.map((c): CompiledContract => {
    const out = output.contracts?.[c.file]?.[c.contract];
    if (!out) throw new Error(`solc produced no output for ${c.file}:${c.contract}`);
    return {
      contract: c.contract,
      prefix: c.prefix,
      abi: out.abi,
      bytecode: `0x${out.evm.bytecode.object}`,
      runtimeBytecode: `0x${out.evm.deployedBytecode.object}`,
    };
  });
  return { solcVersion: solc.version(), sourceHash: hashSources(sources), contracts };
}

export function renderArtifacts(compiled: CompiledContracts): string {
  const lines = [
    "// GENERATED FILE: do not edit.",
    "// Regenerate with `npm run contracts` (scripts/compile-contracts.ts) after changing",
    "// src/evm/devnet/contracts/*.sol.",
    "",
    `export const solcVersion = ${JSON.stringify(compiled.solcVersion)};`,
    "",
    `/** sha256 of the contract sources (${SOURCE_FILES.join(", ")}). */`,
    `export const sourceHash = ${JSON.stringify(compiled.sourceHash)};`,
  ];
  for (const c of compiled.contracts) {
    lines.push(
      "",
      `// ${c.contract}`,
      `export const ${c.prefix}Abi = ${JSON.stringify(c.abi)} as const;`,
      "",
      `/** ${c.contract} creation bytecode (runs the constructor; we never deploy this way). */`,
      `export const ${c.prefix}Bytecode: \`0x\${string}\` = ${JSON.stringify(c.bytecode)};`,
      "",
      `/** ${c.contract} runtime bytecode, as placed on the chain with anvil_setCode. */`,
      `export const ${c.prefix}RuntimeBytecode: \`0x\${string}\` = ${JSON.stringify(c.runtimeBytecode)};`,
    );
  }
  return `${lines.join("\n")}\n`;
}

function main(): void {
  const started = Date.now();
  const compiled = compileContracts();
  writeFileSync(ARTIFACTS_PATH, renderArtifacts(compiled));
  // Format like the rest of the code so `biome ci` passes on the generated file.
  execFileSync(path.join(ROOT, "node_modules/.bin/biome"), ["format", "--write", ARTIFACTS_PATH], {
    cwd: ROOT,
    stdio: "pipe",
  });
  const names = compiled.contracts.map((c) => c.contract).join(", ");
  console.log(
    `Compiled ${names} with solc ${compiled.solcVersion} in ${Date.now() - started} ms; ` +
      `wrote ${path.relative(ROOT, ARTIFACTS_PATH)}`,
  );
}

const invokedPath = process.argv[1];
if (invokedPath && import.meta.url === pathToFileURL(path.resolve(invokedPath)).href) {
  main();
}
