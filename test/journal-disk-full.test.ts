/**
 * A full disk under the journal while settling. Real: a 256 KiB tmpfs mounted for this test (as
 * root on Linux, as CI runs it), filled by a file until a few records fit; real anvil, payments
 * made by the official x402 client, both dialects through the HTTP handler. Where mounting is
 * refused the test says so and is skipped; test/journal-durable.test.ts's injected short write
 * runs everywhere. What must hold: no payment on chain without its record, before and after a
 * restart; a refusal is 503 store_unavailable with Retry-After; /readyz is not ready and doctor
 * names the disk; once space is freed, every refused payment settles once on its retry.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { checkJournalDisk } from "../src/cli/commands/doctor/doctor-disk.js";
import { type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { Facilitator } from "../src/facilitator.js";
import { createHandler, type HttpResponse } from "../src/http/handler.js";
import { Journal } from "../src/store/journal.js";
import { chainOf, tokenBalance } from "./helpers/chain.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let dir: string;
let disk: string;
let mounted: string | undefined;
let devnet: Devnet;
let journal: Journal | undefined;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "facilitator-disk-full-"));
  disk = path.join(dir, "disk");
  mkdirSync(disk);
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", disk], { stdio: "pipe" });
    mounted = disk;
  } catch (error) {
    console.warn(
      `journal-disk-full: cannot mount a tmpfs here (${(error as Error).message.split("\n")[0]}): the full-disk test is skipped; journal-durable.test.ts injects a short write instead`,
    );
  }
  if (mounted) devnet = await startDevnet();
}, 60_000);

afterAll(async () => {
  journal?.close();
  await devnet?.stop();
  // Lazily: a descriptor left open by a failed assertion must not keep the mount.
  if (mounted) execFileSync("umount", ["-l", mounted]);
  rmSync(dir, { recursive: true, force: true });
});

const AMOUNT = 1000n;
const PAYMENTS = 24;

describe("a full disk under the journal", () => {
  test("nothing on chain without its record; 503 store_unavailable; every refused payment settles once after", async (context) => {
    if (!mounted) context.skip();
    const file = path.join(disk, "journal.jsonl");
    const signer = privateKeyToAccount(devnet.facilitator.privateKey);
    journal = new Journal(file);
    const facilitator = new Facilitator({
      rpcUrls: [devnet.rpcUrl],
      useDefaultRpcs: false,
      signer,
      journal,
    });
    const handle = createHandler(facilitator);
    const client = chainOf(devnet);
    const firstBlock = await client.getBlockNumber({ cacheTime: 0 });
    const payee = await tokenBalance(devnet, devnet.payee.address);
    const requirements = requirementsV2(devnet, { amount: AMOUNT.toString() });
    const bodies = await Promise.all(
      Array.from({ length: PAYMENTS }, async (_, i) => {
        const payer = devnet.payers[i % devnet.payers.length];
        if (!payer) throw new Error("no payer");
        const payload = await clientPayload(payer, requirements);
        // Every other one in the x402 dialect, as the official resource server sends it.
        return i % 2 === 0
          ? { payload, requirements }
          : { x402Version: 2, paymentPayload: payload, paymentRequirements: requirements };
      }),
    );
    const settle = (i: number) =>
      handle({
        method: "POST",
        url: "/settle",
        headers: { "content-type": "application/json" },
        body: Buffer.from(JSON.stringify(bodies[i])),
      });
    // Room for a few settlements' records (about 1.4 KB each) and no more.
    const { bavail, bsize } = statfsSync(disk);
    writeFileSync(path.join(disk, "filler"), Buffer.alloc(bavail * bsize - 12 * 1024));

    const answers: HttpResponse[] = [];
    for (let i = 0; i < PAYMENTS; i += 4) {
      answers.push(...(await Promise.all([i, i + 1, i + 2, i + 3].map(settle))));
    }
    const paid = answers.flatMap((a, i) => (JSON.parse(a.body).success === true ? [i] : []));
    const refused = answers.flatMap((a, i) => (a.status === 503 ? [i] : []));
    console.log("settles on a full disk:", { paid: paid.length, refused: refused.length });
    expect(paid.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const i of refused) {
      const answer = answers[i] as HttpResponse;
      expect(answer.headers["retry-after"]).toMatch(/^\d+$/);
      const body = JSON.parse(answer.body);
      if (i % 2 === 0) expect(body).toMatchObject({ success: false, error: "store_unavailable" });
      else expect(body).toMatchObject({ success: false, errorReason: "unexpected_settle_error" });
      expect(JSON.stringify(body)).toMatch(/ENOSPC/);
    }
    // Every answer is a success or that refusal: no failed payment.
    expect(paid.length + refused.length).toBe(PAYMENTS);

    const ours = async () => {
      const head = await client.getBlockNumber({ cacheTime: 0 });
      const hashes: string[] = [];
      for (let n = firstBlock + 1n; n <= head; n++) {
        const block = await client.getBlock({ blockNumber: n, includeTransactions: true });
        for (const tx of block.transactions) {
          if (tx.from.toLowerCase() === signer.address.toLowerCase()) hashes.push(tx.hash);
        }
      }
      return hashes;
    };
    const unrecorded = async (store: Journal, hashes: string[]) =>
      (await Promise.all(hashes.map((h) => store.findByTransaction(h)))).filter((e) => !e).length;
    const sentWhileFull = await ours();
    expect(sentWhileFull).toHaveLength(paid.length);
    expect(await unrecorded(facilitator.journal as Journal, sentWhileFull)).toBe(0);

    // While full: not ready, and doctor names the disk.
    const ready = await handle({ method: "GET", url: "/readyz", headers: {} });
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body)).toMatchObject({
      failed: expect.arrayContaining(["store"]),
      store: { reachable: false, error: expect.stringMatching(/ENOSPC.*mounted at/) },
    });
    const doctor = await checkJournalDisk(file);
    expect(doctor).toMatchObject([{ area: "journal", level: "error" }]);
    expect(doctor[0]?.message).toContain(`mounted at ${disk}`);

    // Space freed: ready again by itself, and each refused payment settles once on its retry.
    rmSync(path.join(disk, "filler"));
    const readyAgain = await handle({ method: "GET", url: "/readyz", headers: {} });
    expect(JSON.parse(readyAgain.body).store).toMatchObject({ reachable: true });
    const retried = await Promise.all(refused.map(settle));
    for (const answer of retried) expect(JSON.parse(answer.body).success).toBe(true);
    const sent = await ours();
    expect(sent).toHaveLength(PAYMENTS);
    expect(await tokenBalance(devnet, devnet.payee.address)).toBe(
      payee + BigInt(PAYMENTS) * AMOUNT,
    );

    // After a restart, the journal read back has every one of them, and no torn line.
    (facilitator.journal as Journal).close();
    const warnings: string[] = [];
    const reopened = new Journal(file, { warn: (m) => warnings.push(m) });
    expect(await unrecorded(reopened, sent)).toBe(0);
    expect(warnings).toEqual([]);
    reopened.close();
    console.log("on chain:", sent.length, "without their record after a restart:", 0);
  }, 120_000);
});
