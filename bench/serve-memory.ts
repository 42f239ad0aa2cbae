/**
 * Memory of `facilitator serve` as an operator runs it (the built bundle, not tsx; run `npm run
 * build` first): one real settlement is made through `serve` on anvil, and its journal lines
 * (send, answered, and its payment-identifier's answer) are copied PAYERS times (default
 * 200,000), each with its own payer, authorization, transaction hash and identifier. `serve` is
 * started on that journal, which it reads into memory as far as memory keeps and archives the
 * rest (issue 40); then LIVE settles (default 200) of freshly signed payments through HTTP, and
 * VmRSS / VmHWM of the process from /proc.
 *
 *   node --import tsx bench/serve-memory.ts          # PAYERS=200000 LIVE=200
 *
 * Prints one JSON line: RSS idle (no history), after start-up on the history, after the live
 * settles, in MiB; how long the start-up took; how many live settles succeeded.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import {
  closeSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { servedUrl, setting, tail, treeStatusKb } from "./lib.js";

export interface ServeRss {
  readonly rssMiB: number;
  readonly hwmMiB: number;
}

const mib = (kb: number) => Math.round((kb / 1024) * 10) / 10;

/** VmRSS and VmHWM of a live process and its children (serve's worker), from /proc. */
export function memoryOf(pid: number): ServeRss {
  return {
    rssMiB: mib(treeStatusKb(pid, "VmRSS") ?? Number.NaN),
    hwmMiB: mib(treeStatusKb(pid, "VmHWM") ?? Number.NaN),
  };
}

const hex = (seed: string, bytes: number) =>
  createHash("sha256")
    .update(seed)
    .digest("hex")
    .repeat(2)
    .slice(0, bytes * 2);

export interface ServeMemory {
  readonly payers: number;
  readonly writtenMs: number;
  readonly startUpMs: number;
  readonly idle: ServeRss;
  readonly loaded: ServeRss;
  readonly live: { readonly asked: number; readonly settled: number };
  readonly after: ServeRss;
}

/** `payers` settlements recorded, then `live` settled through HTTP: the memory of `serve`. */
export async function serveMemory(payers: number, live: number): Promise<ServeMemory> {
  const devnet = await startDevnet({ port: 0 });
  const dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-serve-memory-"));
  const keyFile = path.join(dir, "key");
  const journal = path.join(dir, "journal.jsonl");
  writeFileSync(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
  const env = {
    ...Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("FACILITATOR_")),
    ),
    FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
  };

  function serve(): { child: ChildProcess; url: Promise<string> } {
    const child = spawn(
      process.execPath,
      [
        "bin/facilitator.js",
        "serve",
        "--port",
        "0",
        "--private-key-file",
        keyFile,
        "--rpc-url",
        devnet.rpcUrl,
        "--journal",
        journal,
      ],
      { env, stdio: ["ignore", "ignore", "pipe"] },
    );
    const log = tail(child.stderr);
    return { child, url: servedUrl(child, log) };
  }

  async function stop(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }

  const post = (url: string, body: unknown) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<Record<string, unknown>>);

  try {
    const first = serve();
    const url0 = await first.url;
    const idle = memoryOf(first.child.pid as number);
    const request = await signSampleRequest(devnet, { payer: devnet.payers[0] as never });
    const reply = await post(`${url0}/settle`, request);
    await stop(first.child);
    if (!reply.success) throw new Error(`the template settle failed: ${JSON.stringify(reply)}`);
    const lines = readFileSync(journal, "utf8").split("\n");
    const send = lines.find((l) => l.includes('"t":"send"')) as string;
    const { key, hash, expect } = JSON.parse(send) as {
      key: string;
      hash: string;
      expect: { from: string };
    };
    const own = lines.filter(
      (l) => /"t":"(send|state)"/.test(l) && l.includes(JSON.stringify(key)),
    );
    const payer = expect.from;
    const idLine = JSON.stringify({
      t: "id",
      id: "pay_template_0000000000",
      fingerprint: hex("fingerprint", 32),
      answer: reply,
      at: new Date().toISOString(),
    });

    const started = performance.now();
    const fd = openSync(journal, "w", 0o600);
    const startAt = Date.now() - payers * 10;
    let chunk = "";
    for (let i = 0; i < payers; i++) {
      const at = new Date(startAt + i * 10).toISOString();
      const txHash = `0x${hex(`tx${i}`, 32)}`;
      const payerI = `0x${hex(`payer${i}`, 20)}`;
      const keyI = key
        .replace(/0x[0-9a-f]{64}$/, `0x${hex(`nonce${i}`, 32)}`)
        .replace(new RegExp(payer, "i"), payerI);
      for (const line of own) {
        chunk += `${line
          .replace(JSON.stringify(key), JSON.stringify(keyI))
          .replace(new RegExp(payer, "gi"), payerI)
          .replace(hash, txHash)
          .replace(/"at":"[^"]+"/, `"at":"${at}"`)}\n`;
      }
      chunk += `${idLine
        .replace("pay_template_0000000000", `pay_${hex(`id${i}`, 12)}`)
        .replace(new RegExp(payer, "gi"), payerI)
        .replace(new RegExp(hash, "g"), txHash)
        .replace(/"at":"[^"]+"/, `"at":"${at}"`)}\n`;
      if (chunk.length > 1 << 22) {
        writeSync(fd, chunk);
        chunk = "";
      }
    }
    writeSync(fd, chunk);
    closeSync(fd);
    const written = performance.now() - started;

    const upAt = performance.now();
    const second = serve();
    const url = await second.url;
    const pid = second.child.pid as number;
    const startUpMs = performance.now() - upAt;
    const loaded = memoryOf(pid);
    let settled = 0;
    for (let i = 0; i < live; i += 10) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(10, live - i) }, async (_, k) => {
          const req = await signSampleRequest(devnet, {
            payer: devnet.payers[(i + k) % devnet.payers.length] as never,
            amount: 1000n,
          });
          return post(`${url}/settle`, req);
        }),
      );
      settled += batch.filter((r) => r.success).length;
    }
    const after = memoryOf(pid);
    await stop(second.child);
    return {
      payers,
      writtenMs: Math.round(written),
      startUpMs: Math.round(startUpMs),
      idle,
      loaded,
      live: { asked: live, settled },
      after,
    };
  } finally {
    await devnet.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith("serve-memory.ts")) {
  console.log(JSON.stringify(await serveMemory(setting("PAYERS", 200_000), setting("LIVE", 200))));
}
