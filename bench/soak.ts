/**
 * Memory over time: `facilitator serve` under steady verify load (and a settle a second) for
 * SOAK_SECONDS (default 300), its RSS sampled every 5 s. Fails if the peak passes 150 MiB or the
 * RSS at the end is more than 20 MiB above the level after the first minute.
 *
 *   npm run build && npm run bench:soak
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";

const SECONDS = Number(process.env.SOAK_SECONDS ?? 300);
const CONCURRENCY = Number(process.env.SOAK_CONCURRENCY ?? 16);
const LIMIT_MIB = 150;
const GROWTH_MIB = 20;

const rssMiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

const devnet = await startDevnet({ port: 0 });
const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-soak-"));
writeFileSync(path.join(dir, "key"), devnet.facilitator.privateKey, { mode: 0o600 });
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith("FACILITATOR_")),
);
const server = spawn(
  process.execPath,
  [
    "bin/facilitator.js",
    "serve",
    "--port",
    "0",
    "--rpc-url",
    devnet.rpcUrl,
    "--private-key-file",
    path.join(dir, "key"),
    "--journal",
    path.join(dir, "journal.jsonl"),
    "--rate-per-payer",
    "0",
  ],
  { env, stdio: ["ignore", "ignore", "pipe"] },
);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  server.kill("SIGTERM");
  await devnet.stop();
};
process.once("SIGINT", () => void stop().then(() => process.exit(130)));

try {
  const url = await new Promise<string>((resolve, reject) => {
    let text = "";
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${text}`)), 20_000);
    server.stderr?.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      const match = /"event":"listening","url":"([^"]+)"/.exec(text);
      if (match?.[1]) {
        clearTimeout(timer);
        // Request logs are not needed here; keep draining so the pipe never blocks.
        server.stderr?.removeAllListeners("data");
        server.stderr?.resume();
        resolve(match[1]);
      }
    });
  });
  const pid = server.pid as number;
  const payers = devnet.payers;
  const pool = await Promise.all(
    Array.from({ length: 1000 }, (_, i) =>
      signSampleRequest(devnet, { payer: payers[i % payers.length] as never }),
    ),
  );
  const post = (route: string, body: unknown) =>
    fetch(`${url}${route}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<{ success?: boolean }>);

  const end = Date.now() + SECONDS * 1000;
  let requests = 0;
  let errors = 0;
  let settles = 0;
  const samples: { at: number; mib: number }[] = [];
  const sampler = setInterval(
    () => samples.push({ at: (Date.now() - (end - SECONDS * 1000)) / 1000, mib: rssMiB(pid) }),
    5_000,
  );
  const settler = (async () => {
    while (Date.now() < end) {
      const payer = payers[settles % payers.length] as never;
      const reply = await post("/settle", await signSampleRequest(devnet, { payer }));
      if (!reply.success) errors++;
      settles++;
      await new Promise((r) => setTimeout(r, 1_000));
    }
  })();
  await Promise.all([
    settler,
    ...Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < end) {
        const reply = await post("/verify", pool[requests++ % pool.length]);
        if (!reply.success) errors++;
      }
    }),
  ]);
  clearInterval(sampler);

  const afterWarmup =
    samples.find((s) => s.at >= Math.min(60, SECONDS / 5))?.mib ?? samples[0]?.mib ?? 0;
  const last = samples.at(-1)?.mib ?? 0;
  const peak = Math.max(...samples.map((s) => s.mib));
  console.log(`soak: ${SECONDS} s, verify at concurrency ${CONCURRENCY} plus one settle a second`);
  console.log(`requests ${requests}, settles ${settles}, errors ${errors}`);
  console.log(
    samples.map((s) => `${s.at.toFixed(0).padStart(4)} s  ${s.mib.toFixed(1)} MiB`).join("\n"),
  );
  console.log(
    `RSS after warm-up ${afterWarmup.toFixed(1)} MiB, at the end ${last.toFixed(1)} MiB, peak ${peak.toFixed(1)} MiB`,
  );
  const ok = errors === 0 && peak < LIMIT_MIB && last - afterWarmup < GROWTH_MIB;
  console.log(ok ? "flat: yes" : "flat: NO");
  await stop();
  process.exit(ok ? 0 : 1);
} catch (error) {
  console.error(error);
  await stop();
  process.exit(1);
}
