/**
 * `facilitator devnet --svm-only` and `--svm`, the built CLI as a subprocess: the Solana section of
 * the banner, the cluster answering as Solana devnet, request-svm.json verified as valid by the
 * official x402 SVM facilitator (@x402/svm 2.27) with the fee payer's key from the key file, and
 * SIGINT leaving no process, no listening port and no temporary directory.
 */
import { execFile } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createKeyPairSignerFromBytes, getBase58Encoder } from "@solana/kit";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorSvmSigner } from "@x402/svm";
import { ExactSvmScheme as ExactSvmFacilitator } from "@x402/svm/exact/facilitator";
import { describe, expect, it } from "vitest";
import { associatedTokenAddress, DEVNET_GENESIS_HASH } from "../src/svm/devnet/index.js";
import { type DevnetProcess, spawnDevnet, stop, waitFor } from "./helpers/devnet-process.js";
import { runCli } from "./helpers/run-cli.js";

const NETWORK = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

type Devnet = DevnetProcess;
const stopDevnet = (devnet: Devnet) => stop(devnet);

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function rpc(url: string, method: string, params: unknown[] = []) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return (await response.json()) as { result?: unknown };
}

/** The official SVM facilitator, signing as the key file's owner, and a request file's parts. */
async function reference(rpcUrl: string, keyFile: string, requestFile: string) {
  const secret = (await readFile(keyFile, "utf8")).trim();
  const signer = await createKeyPairSignerFromBytes(
    new Uint8Array(getBase58Encoder().encode(secret)),
  );
  const facilitator = new x402Facilitator();
  facilitator.register(
    NETWORK,
    new ExactSvmFacilitator(toFacilitatorSvmSigner(signer, { defaultRpcUrl: rpcUrl })),
  );
  const { payload, requirements } = JSON.parse(await readFile(requestFile, "utf8"));
  return { facilitator, payload, requirements, secret, signer };
}

/** The official SVM facilitator's verdict on a request file. */
async function referenceVerify(rpcUrl: string, keyFile: string, requestFile: string) {
  const { facilitator, payload, requirements, secret, signer } = await reference(
    rpcUrl,
    keyFile,
    requestFile,
  );
  return { verdict: await facilitator.verify(payload, requirements), secret, signer };
}

/** The value on the banner line that starts with `label`. */
function bannerValue(banner: string, label: string): string {
  const line = banner.split("\n").find((l) => l.trimStart().startsWith(label));
  if (!line) throw new Error(`no "${label}" line in:\n${banner}`);
  return line.trimStart().slice(label.length).trim().split(/\s+/)[0] as string;
}

describe("facilitator devnet --svm-only", () => {
  it("prints the Solana section, answers as devnet, and its request verifies with the official facilitator", async () => {
    const devnet = spawnDevnet(["--svm-only", "--svm-port", "0"]);
    try {
      const banner = await waitFor(devnet, "npx facilitator doctor");
      const solana = banner.slice(banner.indexOf("Solana"));
      const rpcUrl = bannerValue(solana, "RPC URL");
      expect(rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(bannerValue(solana, "network")).toBe(NETWORK);
      expect(bannerValue(solana, "test USDC")).toBe("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU");
      const feePayer = bannerValue(solana, "fee payer");
      const keyFile = solana.match(/key in (\S+svm-fee-payer\.key)/)?.[1] as string;
      const request = bannerValue(solana, "signed request");
      const dir = bannerValue(banner, "directory");
      expect(banner).not.toContain("test USDC    0x"); // no anvil section
      expect(banner).toContain(`npx facilitator verify ${request}`);
      expect(path.basename(request)).toBe("request-svm.json");
      expect(path.dirname(keyFile)).toBe(dir);
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);

      expect((await rpc(rpcUrl, "getGenesisHash")).result).toBe(DEVNET_GENESIS_HASH);

      const env = await readFile(path.join(dir, "devnet.env"), "utf8");
      expect(env).toContain(`export FACILITATOR_RPC_URL='${rpcUrl}'`);
      expect(env).toContain(`export FACILITATOR_SVM_PRIVATE_KEY_FILE='${keyFile}'`);
      expect(env).not.toContain("FACILITATOR_PRIVATE_KEY_FILE=");

      const { verdict, secret, signer } = await referenceVerify(rpcUrl, keyFile, request);
      expect(signer.address).toBe(feePayer);
      expect(verdict).toMatchObject({ isValid: true });

      // What the banner says to do: source devnet.env, then `facilitator verify` the request.
      const ours = await runCli(["verify", request], {
        FACILITATOR_RPC_URL: rpcUrl,
        FACILITATOR_SVM_PRIVATE_KEY_FILE: keyFile,
      });
      expect(JSON.parse(ours.stdout)).toMatchObject({ success: true });
      expect(ours.code).toBe(0);
      // doctor reads the fee payer's SOL on the cluster.
      const doctor = await runCli(["doctor", "--json"], {
        FACILITATOR_RPC_URL: rpcUrl,
        FACILITATOR_SVM_PRIVATE_KEY_FILE: keyFile,
      });
      const findings = (
        JSON.parse(doctor.stdout) as { findings: { level: string; message: string }[] }
      ).findings;
      expect(findings).toContainEqual(
        expect.objectContaining({
          level: "ok",
          message: `Solana fee payer ${feePayer} holds 100 SOL on ${NETWORK} for fees`,
        }),
      );
      expect(banner).toContain(`npx facilitator settle ${request}`);
      // Settled once (a copy: the devnet signs the file again every 20 s), then refused.
      const copy = path.join(os.tmpdir(), `facilitator-svm-request-${process.pid}.json`);
      await writeFile(copy, await readFile(request, "utf8"));
      try {
        const env = { FACILITATOR_RPC_URL: rpcUrl, FACILITATOR_SVM_PRIVATE_KEY_FILE: keyFile };
        const settled = await runCli(["settle", copy], env);
        expect(JSON.parse(settled.stdout)).toMatchObject({
          success: true,
          transactionHash: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{86,88}$/),
        });
        expect(settled.code).toBe(0);
        const again = await runCli(["settle", copy], env);
        expect(JSON.parse(again.stdout)).toMatchObject({
          success: false,
          error: "duplicate_settlement",
        });
        expect(again.code).not.toBe(0);
      } finally {
        await rm(copy, { force: true });
      }
      // The fee payer's key is in its file only.
      expect(devnet.stdout()).not.toContain(secret);
      expect(devnet.stderr()).not.toContain(secret);
      expect(await readFile(path.join(dir, "devnet.json"), "utf8")).not.toContain(secret);

      const port = Number(new URL(rpcUrl).port);
      devnet.child.kill("SIGINT");
      expect(await devnet.exited).toEqual({ code: 0, signal: null });
      expect(devnet.stdout()).toContain(`devnet stopped; ${dir} removed`);
      expect(existsSync(dir)).toBe(false);
      expect(await listening(port)).toBe(false);
    } finally {
      await stopDevnet(devnet);
    }
  });

  it("keeps the cluster's state in --dir between runs", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "facilitator-devnet-svm-"));
    try {
      for (const run of [1, 2]) {
        const devnet = spawnDevnet(["--svm-only", "--svm-port", "0", "--dir", dir, "--json"]);
        try {
          const info = JSON.parse((await waitFor(devnet, "\n")).split("\n")[0] as string);
          expect(info.svm).toMatchObject({ network: NETWORK, genesisHash: DEVNET_GENESIS_HASH });
          const payee = await associatedTokenAddress(
            JSON.parse(await readFile(path.join(dir, "devnet.json"), "utf8")).svm.payee,
          );
          const balance = async () => {
            const { result } = await rpc(info.svm.rpcUrl, "getTokenAccountBalance", [
              payee,
              { commitment: "confirmed" },
            ]);
            return BigInt((result as { value: { amount: string } }).value.amount);
          };
          if (run === 1) {
            expect(existsSync(path.join(dir, "svm-state.bin"))).toBe(false);
            expect(await balance()).toBe(0n);
            // The official facilitator settles the request: the payee has 0.01 USDC.
            const { facilitator, payload, requirements } = await reference(
              info.svm.rpcUrl,
              info.svm.keyFile,
              info.svm.request,
            );
            expect(await facilitator.settle(payload, requirements)).toMatchObject({
              success: true,
            });
            expect(await balance()).toBe(10_000n);
          } else {
            // The second run starts where the first stopped.
            expect(existsSync(path.join(dir, "svm-state.bin"))).toBe(true);
            expect(await balance()).toBe(10_000n);
          }
          devnet.child.kill("SIGINT");
          expect((await devnet.exited).code).toBe(0);
        } finally {
          await stopDevnet(devnet);
        }
      }
      expect(existsSync(path.join(dir, "request-svm.json"))).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses anvil's flags and --svm-port without Solana", async () => {
    for (const args of [
      ["--svm-only", "--port", "0"],
      ["--svm-only", "--demo"],
      ["--svm-port", "0"],
    ]) {
      const devnet = spawnDevnet(args);
      expect((await devnet.exited).code, args.join(" ")).toBe(2);
    }
  });
});

describe("facilitator devnet --svm", () => {
  it("runs both clusters, both RPC URLs in devnet.env, and SIGINT stops both", async () => {
    const execFileAsync = promisify(execFile);
    const devnet = spawnDevnet(["--svm", "--json", "--port", "0", "--svm-port", "0"]);
    try {
      const info = JSON.parse((await waitFor(devnet, "\n")).split("\n")[0] as string);
      expect(info.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(info.request).toBe(path.join(info.dir, "request.json"));
      expect(info.svm.request).toBe(path.join(info.dir, "request-svm.json"));
      const env = await readFile(info.envFile, "utf8");
      expect(env).toContain(`export FACILITATOR_RPC_URL='${info.rpcUrl},${info.svm.rpcUrl}'`);
      expect(env).toContain(`export FACILITATOR_PRIVATE_KEY_FILE='${info.keyFile}'`);
      expect(env).toContain(`export FACILITATOR_SVM_PRIVATE_KEY_FILE='${info.svm.keyFile}'`);
      const devnetJson = JSON.parse(await readFile(path.join(info.dir, "devnet.json"), "utf8"));
      expect(devnetJson).toMatchObject({
        rpcUrl: info.rpcUrl,
        svm: { rpcUrl: info.svm.rpcUrl, network: NETWORK, request: info.svm.request },
      });
      const { verdict } = await referenceVerify(
        info.svm.rpcUrl,
        info.svm.keyFile,
        info.svm.request,
      );
      expect(verdict).toMatchObject({ isValid: true });

      const { stdout: pgrep } = await execFileAsync("pgrep", ["-P", String(devnet.child.pid)]);
      const children = pgrep.split(/\s+/).filter(Boolean).map(Number);
      expect(children.length).toBeGreaterThan(0); // anvil
      devnet.child.kill("SIGINT");
      expect(await devnet.exited).toEqual({ code: 0, signal: null });
      for (const pid of children) expect(() => process.kill(pid, 0)).toThrow();
      expect(await listening(Number(new URL(info.svm.rpcUrl).port))).toBe(false);
      expect(await listening(Number(new URL(info.rpcUrl).port))).toBe(false);
      expect(existsSync(info.dir)).toBe(false);
    } finally {
      await stopDevnet(devnet);
    }
  });
});
