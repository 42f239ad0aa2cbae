/**
 * The steps of a verify through serve, as the source files that do them: the rows of the "where
 * the time goes" table in docs/performance.md (bench/profile.ts). A sample counts for the innermost
 * frame of ours on its stack, so a library's time counts for the step that called it.
 */
import type { Step } from "./cpu-profile.js";

const under =
  (...prefixes: string[]) =>
  (source: string) =>
    prefixes.some((p) => source.startsWith(p));

/** Hashing and byte writing count for the step that asked for them (digest, recover). */
export const VERIFY_HELPERS = under("src/evm/chain/keccak.ts", "src/evm/chain/abi-words.ts");

export const VERIFY_STEPS: readonly Step[] = [
  { name: "node: HTTP server and client, sockets, streams", matches: under("node:") },
  { name: "garbage collection", matches: under("(garbage collector)") },
  { name: "V8 and native, unattributed", matches: (s) => s.startsWith("(") },
  {
    name: "our HTTP adapter: body, connection gate, Host check",
    matches: under(
      "src/http/server.ts",
      "src/http/connections.ts",
      "src/http/limits.ts",
      "src/http/hosts.ts",
    ),
  },
  { name: "metrics", matches: under("src/http/metrics.ts", "src/core/metrics.ts") },
  {
    name: "parse and validate",
    // The bazaar extension's reading, protocol/ before it had a folder of its own.
    matches: under("src/protocol/", "src/bazaar/bazaar", "src/bazaar/json-schema"),
  },
  {
    name: "route (handler, core, family, scheme)",
    matches: under(
      "src/http/",
      "src/core/facilitator.ts",
      "src/evm/family.ts",
      "src/evm/options.ts",
      "src/evm/scheme.ts",
      "src/evm/schemes.ts",
    ),
  },
  {
    name: "recover the signer",
    matches: under("src/evm/chain/secp256k1.ts", "src/evm/exact/signature.ts"),
  },
  { name: "digest", matches: under("src/evm/exact/eip3009-encoding.ts") },
  { name: "ledger read", matches: under("src/core/ledger", "src/evm/chain/ledger-reads.ts") },
  {
    name: "chain reads (RPC)",
    matches: under("src/evm/chain/", "src/rpc/rpc.ts", "src/rpc/json-rpc.ts"),
  },
  { name: "checks", matches: under("src/evm/exact/", "src/evm/upto/", "src/evm/") },
  { name: "other of ours", matches: under("src/") },
];

/** A settle is a verify again, then the transaction: these rows come first, the verify's after. */
export const SETTLE_STEPS: readonly Step[] = [
  {
    name: "store: journal records, holds, answers",
    matches: under(
      "src/store/",
      "src/cli/facilitator/watched-journal.ts",
      "src/core/answers.ts",
      "src/core/idempotency.ts",
      "src/core/ledger",
      "src/core/store.ts",
    ),
  },
  {
    name: "settle loop and key turns",
    matches: under("src/core/settle-loop.ts", "src/core/throttle.ts"),
  },
  {
    name: "the transaction: prepare, sign, send, receipt",
    matches: under(
      "src/evm/chain/broadcast.ts",
      "src/evm/chain/transactions.ts",
      "src/evm/chain/outcome.ts",
      "src/evm/chain/receipts.ts",
      "src/evm/chain/fees.ts",
      "src/evm/chain/gas",
      "src/evm/chain/signers.ts",
      "src/evm/chain/follow.ts",
      "src/evm/chain/rlp-transaction.ts",
      // secp256k1.ts also recovers the payer (a verify's step): only its signing counts here.
      "src/evm/chain/secp256k1.ts:signTransaction",
      "src/evm/exact/pipeline.ts",
      "src/evm/exact/judge.ts",
    ),
  },
  ...VERIFY_STEPS,
];
