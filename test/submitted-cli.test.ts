/**
 * A payment answered `submitted` through the CLI is followed until it lands (issue 29), the built
 * CLI against a real anvil devnet (blocks mined by hand) with a journal file: `settle --wait-until
 * submitted` answers the hash; the transaction is dropped from the node's pool; `status` says it
 * was sent and is not mined yet and `doctor` names it; `facilitator reconcile` sends the same
 * bytes again and records it landed; `status` then says answered, and the same request settled
 * again is never a second success.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createTestClient, type Hex, http } from "viem";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type DevAccount, type Devnet, startDevnet } from "../src/evm/devnet/index.js";
import { chainOf } from "./helpers/chain.js";
import { runCli } from "./helpers/run-cli.js";
import { clientPayload, requirementsV2 } from "./helpers/x402.js";

let devnet: Devnet;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  [devnet, dir] = await Promise.all([
    startDevnet({ mining: "manual" }),
    mkdtemp(path.join(os.tmpdir(), "facilitator-submitted-cli-")),
  ]);
  const keyFile = path.join(dir, "key");
  await writeFile(keyFile, devnet.facilitator.privateKey, { mode: 0o600 });
  env = {
    FACILITATOR_RPC_URL: devnet.rpcUrl,
    FACILITATOR_PRIVATE_KEY_FILE: keyFile,
    FACILITATOR_JOURNAL: path.join(dir, "journal.jsonl"),
    FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
  };
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const anvil = () => createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });

/** Mines a block every 100 ms until `work` is done. */
async function mining<T>(work: Promise<T>): Promise<T> {
  let done = false;
  const mined = (async () => {
    while (!done) {
      await anvil().mine({ blocks: 1 });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  try {
    return await work;
  } finally {
    done = true;
    await mined;
  }
}

test("submitted, dropped, reconciled: every command says what is true, one success", async () => {
  const requirements = requirementsV2(devnet, { amount: "1000" });
  const payload = await clientPayload(devnet.payers[1] as DevAccount, requirements);
  const request = path.join(dir, "req.json");
  await writeFile(request, JSON.stringify({ payload, requirements }));

  const settled = await runCli(["settle", "--wait-until", "submitted", request, "-q"], env);
  expect(settled.code, settled.stderr).toBe(0);
  const hash = (JSON.parse(settled.stdout) as { transactionHash: Hex }).transactionHash;
  await anvil().dropTransaction({ hash });

  const open = await runCli(["status", request, "-q"], env);
  const before = JSON.parse(open.stdout);
  expect(before, open.stdout).toMatchObject({ found: true, state: "submitted" });
  expect(String(before.meaning)).toMatch(/not mined yet/);
  const doctor = await runCli(["doctor"], env);
  expect(doctor.stdout + doctor.stderr).toContain(hash);

  const reconciled = await mining(runCli(["reconcile", "-q"], env));
  expect(reconciled.code, reconciled.stdout + reconciled.stderr).toBe(0);
  expect(JSON.parse(reconciled.stdout)).toMatchObject({ followed: 1, counts: { landed: 1 } });
  expect((await chainOf(devnet).getTransactionReceipt({ hash })).status).toBe("success");

  const closed = JSON.parse((await runCli(["status", request, "-q"], env)).stdout);
  expect(closed).toMatchObject({ found: true, state: "answered" });
  const again = await mining(runCli(["settle", request, "-q"], env));
  expect(again.code).not.toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ success: false, error: "nonce_already_used" });
}, 90_000);
