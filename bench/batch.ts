/**
 * batch-settlement against `exact`, ours beside the official x402 facilitator (@x402/core +
 * @x402/evm 2.27), on one devnet:
 *
 * 1. Gas per paid request at N vouchers per channel (1, 10, 50, 500), K channels (10 payers, each
 *    its own channel to the payee): each payer's first payment is the official client's deposit
 *    (EIP-3009 collector; again with the Permit2 collector, the payer having approved Permit2
 *    before, not counted) carrying the first voucher, verified then settled; N-1 more vouchers are
 *    verified (no transaction); then one claim of all K channels' latest vouchers (signed by the
 *    receiver authorizer the facilitator holds) and one settle (sweep) to the payee. Gas from the
 *    receipts: (K deposits + claim + settle) / (K × N), beside one `exact` EIP-3009 transfer
 *    measured on the same devnet. The payee has been paid and has claimed and settled before
 *    (a warm-up, not counted), as a seller in business has.
 * 2. Paid requests per second through `serve` (a child process): a voucher (POST /verify of a
 *    fresh voucher, cumulative amounts rising over many funded channels; a voucher is never
 *    settled by itself) against an `exact` EIP-3009 payment (POST /verify, then POST /settle with
 *    waitUntil confirmed, as the x402 middleware does before it answers), at concurrency 16 and
 *    64; the same for the official facilitator behind a minimal node:http server.
 *
 * Each server reaches anvil through its own counting JSON-RPC proxy, so the rate table says how
 * many RPC calls a request cost. Prints markdown tables; exits 1 if any request that should have
 * succeeded failed, or a balance on chain is not what the requests moved.
 *
 *   npm run build && npm run bench:batch
 *   BENCH_BATCH_N=1,50 BENCH_BATCH_VOUCHERS=1000 npm run bench:batch
 *
 * Settings (environment): BENCH_BATCH_N (vouchers per channel, "1,10,50,500"),
 * BENCH_BATCH_CHANNELS (K, 10), BENCH_BATCH_PERMIT2 (0: EIP-3009 deposits only),
 * BENCH_BATCH_RATE_CHANNELS (funded channels the voucher rate runs over, 64), BENCH_BATCH_VOUCHERS
 * (voucher verifies per level and server, 3000), BENCH_BATCH_EXACT (exact paid requests per level
 * and server, 600),
 * BENCH_BATCH_CONCURRENCY ("16,64"), BENCH_BATCH_SECONDS (time bound per level, 20).
 *
 * This file runs the bench (and, as BENCH_BATCH_ROLE=official, the official facilitator's
 * process); the parts are in bench/batch-*.ts: settings, devnet payers, channel payloads and
 * actions, the two servers and the RPC proxy, the load loop, both measurements, the tables.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type DevAccount, type Devnet, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { claimAndSettle, openChannels } from "./batch-channel-actions.js";
import { type Method, PRICE, requirementsFor } from "./batch-channel-payloads.js";
import { freshPayer, fundPayers, planPayers } from "./batch-devnet-payers.js";
import { exactGas, measureGas } from "./batch-gas-per-request.js";
import { runOfficialServer } from "./batch-official-facilitator.js";
import { measureRates } from "./batch-requests-per-second.js";
import { type RpcCounter, rpcProxy } from "./batch-rpc-proxy.js";
import { fail, failures, log } from "./batch-run-log.js";
import { startOfficial, startOurs, type Target } from "./batch-server-processes.js";
import { CONCURRENCY, PERMIT2, RATE_CHANNELS } from "./batch-settings.js";
import { printReport } from "./batch-tables.js";
import { cleanEnv, exited, stopChild } from "./lib.js";
import { ROOT } from "./settle-lib.js";

async function main(): Promise<number> {
  const started = performance.now();
  if (!existsSync(path.join(ROOT, "dist/main.js"))) {
    console.error("bench: dist/ is missing; run `npm run build` first");
    return 2;
  }
  if (RATE_CHANNELS < Math.max(...CONCURRENCY)) {
    console.error("bench: BENCH_BATCH_RATE_CHANNELS must be at least the highest concurrency");
    return 2;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-batch-"));
  let chain: Devnet | undefined;
  const targets: Target[] = [];
  const proxies: RpcCounter[] = [];
  const cleanup = async () => {
    await Promise.all(targets.map((t) => stopChild(t.child)));
    await Promise.all(proxies.map((p) => p.close()));
    await chain?.stop();
    rmSync(dir, { recursive: true, force: true });
    // The settlement-key locks of this run's serve (lib.ts puts them under the temp directory).
    const locks = cleanEnv().FACILITATOR_LOCK_DIR;
    if (locks) rmSync(locks, { recursive: true, force: true });
  };
  const interrupted = () => {
    void cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    chain = await startDevnet({ port: 0 });
    const devnet = chain;
    const authorizer = devAccounts[7] as DevAccount;
    const relayer = freshPayer();
    const methods: Method[] = PERMIT2 ? ["eip3009", "permit2"] : ["eip3009"];
    const payers = planPayers(methods);
    await fundPayers(devnet, payers, relayer);

    const keyFile = path.join(dir, "settlement.key");
    writeFileSync(keyFile, `${devnet.facilitator.privateKey}\n`, { mode: 0o600 });
    const oursRpc = await rpcProxy(devnet.rpcUrl);
    const officialRpc = await rpcProxy(devnet.rpcUrl);
    proxies.push(oursRpc, officialRpc);
    const ours = await startOurs({
      rpc: oursRpc,
      keyFile,
      authorizer,
      seller: devnet.payee.address,
      dir,
    });
    targets.push(ours);
    const official = await startOfficial({
      script: fileURLToPath(import.meta.url),
      rpc: officialRpc,
      relayer,
      authorizer,
    });
    targets.push(official);
    log(
      `devnet ${devnet.rpcUrl}; ours settles from ${devnet.facilitator.address}, the official ` +
        `facilitator from ${relayer.address}; both hold receiver authorizer ${authorizer.address}; ` +
        `${os.cpus().length} cores, node ${process.version}`,
    );

    // Warm-up, not counted: the payee holds the token, has claimed and settled before.
    const accepted = requirementsFor(devnet, authorizer, "eip3009");
    await exactGas(devnet, ours, devnet.payers[0] as DevAccount);
    const warm = await openChannels(
      devnet,
      ours,
      [payers.warmPayer],
      accepted,
      5n * PRICE,
      1,
      "warm-up",
    );
    await claimAndSettle(devnet, ours, warm.channels, accepted, "warm-up");

    const { exact, rounds } = await measureGas(
      devnet,
      targets,
      authorizer,
      payers.roundPayers,
      methods,
    );
    const journalFile = path.join(dir, "journal.jsonl");
    const { rates, journal } = await measureRates(
      devnet,
      ours,
      targets,
      payers.ratePayers,
      accepted,
      journalFile,
    );
    for (const target of targets) {
      if (exited(target.child)) fail(target.name, `the server exited early:\n${target.log()}`);
    }

    printReport({ rounds, exact, rates, journal, journalFile, started });
    if (failures.length > 0) {
      console.error("");
      for (const failure of failures.slice(0, 20)) console.error(`bench: FAILED ${failure}`);
      if (failures.length > 20) console.error(`bench: … ${failures.length - 20} more failures`);
      return 1;
    }
    console.log("no request failed; every claim and settle moved what it should");
    return 0;
  } catch (error) {
    console.error(
      `bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    for (const target of targets) {
      const text = target.log().trim();
      if (text) console.error(`${target.name} stderr (tail):\n${text}`);
    }
    return 1;
  } finally {
    await cleanup();
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

if (process.env.BENCH_BATCH_ROLE === "official") {
  await runOfficialServer();
} else {
  process.exitCode = await main();
}
