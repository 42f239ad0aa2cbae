/**
 * The verify path without a socket, in this process: the same Facilitator serve builds (libsecp256k1
 * loaded, a settlement key, a journal) asked directly, then through serve's request handler as a
 * function (routing, Host check, metrics left out), at concurrency 1 and 64. What this process's
 * CPU per verify is here, next to bench:compare's server CPU through serve, is what node's HTTP
 * server and sockets add. anvil answers the one RPC round trip a verify makes, in its own process.
 *
 *   npm run bench:verify-core
 *   BENCH_METHOD=permit2 BENCH_REQUESTS=5000 npm run bench:verify-core
 *
 * Settings (environment): BENCH_REQUESTS (verifies per row, 4000), BENCH_POOL (distinct signed
 * payloads, 1000), BENCH_METHOD (eip3009, permit2, upto).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { settlementAccount, useWasmSecp256k1 } from "../src/evm/chain/secp256k1.js";
import { type DevAccount, devAccounts, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler } from "../src/http/handler.js";
import { handleVerify } from "../src/protocol/respond.js";
import { Journal } from "../src/store/journal.js";
import { benchMethod, setting } from "./lib.js";

const REQUESTS = Math.floor(setting("BENCH_REQUESTS", 4000));
const POOL = Math.floor(setting("BENCH_POOL", 1000));

interface Row {
  readonly label: string;
  readonly perSecond: number;
  readonly cpuMs: number;
}

/** Runs `one(i)` `REQUESTS` times, `concurrency` at a time; this process's CPU per call. */
async function measure(
  label: string,
  concurrency: number,
  one: (i: number) => Promise<boolean>,
): Promise<Row> {
  let next = 0;
  let failed = 0;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const worker = async () => {
    while (next < REQUESTS) {
      const i = next++;
      if (!(await one(i))) failed += 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  if (failed > 0) throw new Error(`${label}: ${failed} verifies failed`);
  return {
    label,
    perSecond: REQUESTS / seconds,
    cpuMs: (used.user + used.system) / 1000 / REQUESTS,
  };
}

async function main(): Promise<number> {
  const devnet = await startDevnet({ port: 0 });
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-bench-verify-core-"));
  try {
    const method = await benchMethod(devnet);
    const texts = await Promise.all(
      Array.from({ length: POOL }, async (_, i) =>
        JSON.stringify(
          await method.sign(devnet.payers[i % devnet.payers.length] as DevAccount, 10_000n),
        ),
      ),
    );
    await useWasmSecp256k1();
    const facilitator = new Facilitator({
      rpcUrls: [devnet.rpcUrl],
      signers: [settlementAccount((devAccounts[0] as DevAccount).privateKey)],
      journal: new Journal(path.join(dir, "journal.jsonl")),
    });
    const handle = createHandler(facilitator);
    const direct = async (i: number) => {
      const reply = await handleVerify(facilitator, JSON.parse(texts[i % POOL] as string));
      return reply.status === 200 && reply.body.success === true;
    };
    const headers = { host: "127.0.0.1", "content-type": "application/json" };
    const handler = async (i: number) => {
      const response = await handle({
        method: "POST",
        url: "/verify",
        headers,
        body: Buffer.from(texts[i % POOL] as string),
        client: "127.0.0.1",
      });
      return response.status === 200 && response.body.includes('"success":true');
    };
    // Warm-up: the asset's code and domain cached, the JIT settled.
    await measure("warm-up", 16, direct);
    const rows = [
      await measure("handleVerify, concurrency 1", 1, direct),
      await measure("handleVerify, concurrency 64", 64, direct),
      await measure("HTTP handler (no socket), concurrency 64", 64, handler),
    ];
    console.log(
      `bench:verify-core ${method.name}: ${REQUESTS} verifies per row from ${POOL} signed ` +
        `payloads; node ${process.version}, ${os.cpus().length} cores`,
    );
    const width = Math.max(...rows.map((r) => r.label.length));
    console.log(`${"".padEnd(width)}  verifies/s  CPU ms/verify (this process)`);
    for (const row of rows) {
      console.log(
        `${row.label.padEnd(width)}  ${row.perSecond.toFixed(0).padStart(10)}  ${row.cpuMs.toFixed(3).padStart(8)}`,
      );
    }
    return 0;
  } finally {
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
