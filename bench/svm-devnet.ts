/**
 * The local Solana devnet in a process of its own, for bench/svm.ts: litesvm and its RPC server
 * then have an event loop to themselves, as anvil has, instead of sharing the load generator's.
 * Prints one JSON line on stdout, `{"rpcUrl": …}`, once it listens (no keys: the bench derives the
 * devnet's well-known keys itself), and stops on SIGTERM or SIGINT.
 *
 *   BENCH_SVM_SLOT_MS (default 400), BENCH_SVM_PAYERS (default 8)
 */
import { startSvmDevnet } from "../src/svm/devnet/index.js";
import { setting } from "./lib.js";

const devnet = await startSvmDevnet({
  port: 0,
  host: "127.0.0.1",
  slotMs: setting("BENCH_SVM_SLOT_MS", 400),
  payers: Math.floor(setting("BENCH_SVM_PAYERS", 8)),
});
const stop = () => {
  void devnet.stop().finally(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
process.stdout.write(`${JSON.stringify({ rpcUrl: devnet.rpcUrl })}\n`);
