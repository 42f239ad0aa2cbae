/** `facilitator devnet`: anvil (and/or a Solana cluster) with funded accounts, until Ctrl-C. */

import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createPublicClient, http } from "viem";
import { receiverAuthorizerAccount } from "../../../evm/devnet/accounts.js";
import { startDevnet } from "../../../evm/devnet/index.js";
import { genesisHash } from "../../facilitator/devnet-marker.js";
import { isPortTaken, UsageError, wholeFlag } from "../../io/errors.js";
import { fitLines, terminalWidth } from "../../io/fit-lines.js";
import { warn } from "../../io/output.js";
import { DEVNET_DIR_PREFIX } from "../../io/stale-devnet.js";
import { devnetBanner, tryLines } from "./devnet-banner.js";
import {
  evmInfo,
  type Files,
  json,
  putFile,
  REQUEST_KEYS,
  type Running,
  requestFileName,
  requestFiles,
  writeEvmFiles,
} from "./devnet-files.js";

export interface DevnetFlags {
  readonly port?: string | undefined;
  readonly chainId?: string | undefined;
  readonly dir?: string | undefined;
  readonly json?: boolean | undefined;
  readonly demo?: boolean | undefined;
  readonly svm?: boolean | undefined;
  readonly svmOnly?: boolean | undefined;
  readonly svmPort?: string | undefined;
}

const DEFAULT_PORT = 8545;
const DEFAULT_SVM_PORT = 8899;

/** Listens on --port's port (taken: a usage error), else on `preferred`, else on a free one (said). */
async function startOnPort<T extends { readonly rpcUrl: string }>(
  [portFlag, flag]: [string | undefined, string],
  preferred: number,
  [holder, who]: [string, string],
  start: (port: number) => Promise<T>,
): Promise<{ started: T; taken?: number | undefined }> {
  if (portFlag !== undefined) {
    const port = wholeFlag(portFlag, flag, 65535);
    try {
      return { started: await start(port) };
    } catch (error) {
      if (!isPortTaken(error)) throw error;
      throw new UsageError(
        `${flag} ${port} is taken (${holder}?): pick another, or leave ${flag} out for a free one`,
      );
    }
  }
  try {
    return { started: await start(preferred) };
  } catch (error) {
    if (!isPortTaken(error)) throw error;
    // Taken (another node, another devnet): a free port, said out loud.
    const started = await start(0);
    warn(`port ${preferred} is taken (${holder}?): ${who} listens on ${started.rpcUrl}`);
    return { started, taken: preferred };
  }
}

/** The files a devnet writes into its directory; a new devnet in the same --dir replaces them. */
const DEVNET_FILES = [
  "facilitator.key",
  "receiver-authorizer.key",
  "journal.jsonl",
  ...REQUEST_KEYS.map(requestFileName),
  "svm-fee-payer.key",
  "request-svm.json",
  "devnet.env",
  "devnet.json",
];

/** The directory: --dir (emptied of an earlier devnet's files), or a new temporary one. */
async function prepareDir(
  dirFlag: string | undefined,
): Promise<{ dir: string; temporary: boolean }> {
  if (!dirFlag) {
    return { dir: await mkdtemp(path.join(os.tmpdir(), DEVNET_DIR_PREFIX)), temporary: true };
  }
  const dir = path.resolve(dirFlag);
  await mkdir(dir, { recursive: true });
  if (existsSync(path.join(dir, "devnet.json"))) {
    // Its journal and requests are of a chain that is gone: they must not meet this one.
    await Promise.all(DEVNET_FILES.map((name) => rm(path.join(dir, name), { force: true })));
    warn(`replaced the files of an earlier devnet in ${dir} (its journal and signed requests)`);
  }
  return { dir, temporary: false };
}

/** What devnet.env sets or unsets: an earlier `source` (another devnet's) must not mix in. */
const DEVNET_ENV_NAMES = [
  "FACILITATOR_RPC_URL",
  "FACILITATOR_PRIVATE_KEY_FILE",
  "FACILITATOR_PRIVATE_KEY",
  "FACILITATOR_RECEIVER_AUTHORIZER_KEY_FILE",
  "FACILITATOR_RECEIVER_AUTHORIZER_KEY",
  "FACILITATOR_API_KEYS_FILE",
  "FACILITATOR_API_KEY",
  "FACILITATOR_SVM_PRIVATE_KEY_FILE",
  "FACILITATOR_SVM_PRIVATE_KEY",
  "FACILITATOR_JOURNAL",
  "FACILITATOR_STORE",
  "FACILITATOR_LOCK_DIR",
];

/** `export NAME='value'` lines a shell can source (values quoted), then one `unset` of the rest. */
function envFile(vars: Record<string, string | undefined>): string {
  const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;
  const unset = DEVNET_ENV_NAMES.filter((name) => vars[name] === undefined);
  return `${[
    ...Object.entries(vars).flatMap(([name, value]) =>
      value === undefined ? [] : [`export ${name}=${quote(value)}`],
    ),
    ...(unset.length > 0 ? [`unset ${unset.join(" ")}`] : []),
  ].join("\n")}\n`;
}

/** The clusters asked for: anvil unless --svm-only, Solana with --svm or --svm-only. */
function clusters(flags: DevnetFlags): { evm: boolean; svm: boolean } {
  if (flags.svmOnly) {
    if (flags.svm) throw new UsageError("--svm and --svm-only: pick one");
    if (flags.port !== undefined) throw new UsageError("--port is anvil's: not with --svm-only");
    if (flags.demo) throw new UsageError("--demo runs on anvil: not with --svm-only");
    return { evm: false, svm: true };
  }
  if (flags.svmPort !== undefined && !flags.svm) {
    throw new UsageError("--svm-port needs --svm (or --svm-only)");
  }
  return { evm: true, svm: Boolean(flags.svm) };
}

async function startAll(flags: DevnetFlags, running: Running): Promise<void> {
  const wanted = clusters(flags);
  if (wanted.evm) {
    const chainId = wholeFlag(flags.chainId ?? "31337", "--chain-id", 2 ** 53 - 1);
    if (chainId === 0) throw new UsageError("--chain-id must be positive");
    const { started, taken } = await startOnPort(
      [flags.port, "--port"],
      DEFAULT_PORT,
      ["another devnet or node", "this devnet"],
      (port) => startDevnet({ port, chainId }),
    );
    Object.assign(running, { devnet: started, taken });
  }
  if (wanted.svm) {
    // Solana's code (and litesvm's native module) loads only when a Solana cluster runs.
    const { startSvmDevnet } = await import("../../../svm/devnet/index.js");
    // The cluster's state stays in --dir between runs; a temporary directory keeps none.
    const options = flags.dir ? { dir: path.resolve(flags.dir) } : {};
    const { started, taken } = await startOnPort(
      [flags.svmPort, "--svm-port"],
      DEFAULT_SVM_PORT,
      ["another devnet or validator", "the Solana devnet"],
      (port) => startSvmDevnet({ ...options, port }),
    );
    Object.assign(running, { svm: started, svmTaken: taken });
  }
}

async function writeAll(running: Running, dir: string): Promise<Files> {
  const { devnet, svm } = running;
  const evm = devnet ? await writeEvmFiles(devnet, dir) : undefined;
  // Solana's code (and litesvm's native module) loads only when a Solana cluster runs.
  const solana = svm ? await import("./devnet-svm.js") : undefined;
  const svmFiles = svm && solana ? await solana.writeSvmFiles(svm, dir) : undefined;
  const journal = path.join(dir, "journal.jsonl");
  const rpcUrls = [devnet?.rpcUrl, svm?.rpcUrl].filter((url) => url !== undefined);
  const env = await putFile(
    dir,
    "devnet.env",
    envFile({
      FACILITATOR_RPC_URL: rpcUrls.join(","),
      FACILITATOR_PRIVATE_KEY_FILE: evm?.keyFile,
      FACILITATOR_RECEIVER_AUTHORIZER_KEY_FILE: evm?.receiverAuthorizerKeyFile,
      FACILITATOR_API_KEYS_FILE: evm?.apiKeysFile,
      FACILITATOR_SVM_PRIVATE_KEY_FILE: svmFiles?.keyFile,
      FACILITATOR_JOURNAL: journal,
      // Anvil's well-known key, this chain only: its lock lives here, apart from other devnets'.
      FACILITATOR_LOCK_DIR: path.join(dir, "locks"),
    }),
  );
  const genesis = devnet
    ? await genesisHash(createPublicClient({ transport: http(devnet.rpcUrl) }))
    : undefined;
  await putFile(
    dir,
    "devnet.json",
    json({
      ...(devnet && evm && genesis ? evmInfo(devnet, evm, genesis) : {}),
      journal,
      ...(svm && svmFiles && solana ? { svm: solana.svmInfo(svm, svmFiles) } : {}),
    }),
  );
  return { dir, journal, envFile: env, genesisHash: genesis, evm, svm: svmFiles };
}

/** The one JSON line of --json: anvil's details at the top level as before, Solana's under svm. */
function jsonLine(running: Running, files: Files): string {
  const { devnet, taken, svm, svmTaken } = running;
  const { dir, journal, envFile, evm } = files;
  // Undefined fields (a cluster not run, a port not taken) are left out of the line.
  return JSON.stringify({
    ...(devnet && evm
      ? {
          rpcUrl: devnet.rpcUrl,
          chainId: devnet.chainId,
          genesisHash: files.genesisHash,
          portTaken: taken,
        }
      : {}),
    dir,
    keyFile: evm?.keyFile,
    journal,
    envFile,
    ...(evm ? { ...requestFiles(evm), receiverAuthorizer: receiverAuthorizerAccount.address } : {}),
    svm: svm &&
      files.svm && {
        rpcUrl: svm.rpcUrl,
        genesisHash: svm.genesisHash,
        network: svm.network,
        portTaken: svmTaken,
        keyFile: files.svm.keyFile,
        request: files.svm.request,
      },
  });
}

export async function runDevnet(flags: DevnetFlags): Promise<number> {
  const running: Running = {};
  let where: { dir: string; temporary: boolean } | undefined;
  let files: Files | undefined;
  let stopped = false;
  let stopping: Promise<NodeJS.Signals> | undefined;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    files?.svm?.stop();
    await Promise.all([running.devnet?.stop(), running.svm?.stop()]);
    if (where?.temporary) await rm(where.dir, { recursive: true, force: true });
  };
  try {
    await startAll(flags, running);
    where = await prepareDir(flags.dir);
    files = await writeAll(running, where.dir);
    // Listened for before anything is printed: whoever reads the first line may signal at once.
    stopping = new Promise<NodeJS.Signals>((resolve) => {
      for (const name of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
        process.once(name, () => resolve(name));
      }
    });
    const { devnet } = running;
    if (flags.json) {
      process.stdout.write(`${jsonLine(running, files)}\n`);
    } else {
      const banner = devnetBanner(running, files, where.temporary);
      process.stdout.write(`${fitLines(banner, terminalWidth())}\n`);
    }
    if (flags.demo && devnet) {
      const { runDemo } = await import("./devnet-demo.js");
      await runDemo(devnet);
    }
    if (!flags.json)
      process.stdout.write(`${fitLines(tryLines(running, files), terminalWidth())}\n`);
  } catch (error) {
    await stop();
    throw error;
  }
  // Ctrl-C, a kill, or its terminal closed (SIGHUP): each stops the chains and removes the files.
  const signal = await stopping;
  await stop();
  if (!flags.json && signal !== "SIGHUP") {
    process.stdout.write(
      where.temporary
        ? `devnet stopped; ${where.dir} removed\n`
        : `devnet stopped; its files stay in ${where.dir}\n`,
    );
  }
  return 0;
}
