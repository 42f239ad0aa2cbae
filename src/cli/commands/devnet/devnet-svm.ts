/** `devnet`'s Solana side: a blockhash lives ~a minute, so the request is signed again often. */
import { rename, writeFile } from "node:fs/promises";
import path from "node:path";
import type { SvmDevnet } from "../../../svm/devnet/index.js";
import { signSvmSampleRequest } from "../../../svm/devnet/sign-payment.js";
import { warn } from "../../io/output.js";
import { json, putFile, type SvmFiles } from "./devnet-files.js";
import { REFRESH_MS } from "./devnet-svm-banner.js";

async function writeRequest(svm: SvmDevnet, file: string): Promise<void> {
  const payer = svm.payers[0];
  if (!payer) throw new Error("the Solana devnet has no payer");
  const body = await signSvmSampleRequest(svm, payer);
  // Whole or not at all: a reader never sees half a file while it is signed again.
  await writeFile(`${file}.tmp`, json(body));
  await rename(`${file}.tmp`, file);
}

/** Writes the fee payer's key (0600, never printed) and request-svm.json, kept fresh. */
export async function writeSvmFiles(svm: SvmDevnet, dir: string): Promise<SvmFiles> {
  // Base58, the 64-byte secret key in the form the x402 tooling uses.
  const keyFile = await putFile(dir, "svm-fee-payer.key", `${svm.feePayer.secretKey}\n`, 0o600);
  const request = path.join(dir, "request-svm.json");
  await writeRequest(svm, request);
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    writeRequest(svm, request)
      .catch((error: unknown) => warn(`could not sign ${request} again: ${String(error)}`))
      .finally(() => {
        busy = false;
      });
  }, REFRESH_MS);
  return { keyFile, request, stop: () => clearInterval(timer) };
}

export function svmInfo(svm: SvmDevnet, files: SvmFiles) {
  return {
    rpcUrl: svm.rpcUrl,
    genesisHash: svm.genesisHash,
    network: svm.network,
    mint: svm.mint,
    feePayer: svm.feePayer.address,
    payers: svm.payers.map((p) => p.address),
    payee: svm.payee.address,
    keyFile: files.keyFile,
    request: files.request,
  };
}
