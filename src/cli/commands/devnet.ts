/**
 * `facilitator devnet`: anvil with test tokens, Permit2 and the x402 proxies, and funded accounts,
 * plus ready-signed request files and the commands that use them, all in one directory with the
 * devnet's own journal. Runs until Ctrl-C and leaves no process (and, without --dir, no
 * directory) behind.
 */
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createPublicClient, type Hex, http } from "viem";
import { approvePermit2, type Devnet, startDevnet } from "../../devnet/index.js";
import { signSampleRequest } from "../../devnet/sample.js";
import { signPermitRequest } from "../../devnet/sign-permit.js";
import { signUptoRequest } from "../../devnet/sign-upto.js";
import { UsageError } from "../errors.js";
import { warn } from "../output.js";
import { devnetBanner } from "./devnet-banner.js";

export interface DevnetFlags {
  readonly port?: string | undefined;
  readonly chainId?: string | undefined;
  readonly dir?: string | undefined;
  readonly json?: boolean | undefined;
  readonly demo?: boolean | undefined;
}

const DEFAULT_PORT = 8545;

function parseWhole(value: string, flag: string, max: number): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0 || n > max)
    throw new UsageError(`${flag} must be a whole number up to ${max}`);
  return n;
}

const portTaken = (error: unknown) =>
  error instanceof Error && /Address already in use/i.test(error.message);

/** The devnet, and the port asked for when it was taken (the devnet then took a free one). */
async function start(flags: DevnetFlags): Promise<{ devnet: Devnet; taken?: number }> {
  const chainId = parseWhole(flags.chainId ?? "31337", "--chain-id", 2 ** 53 - 1);
  if (chainId === 0) throw new UsageError("--chain-id must be positive");
  if (flags.port !== undefined) {
    const port = parseWhole(flags.port, "--port", 65535);
    try {
      return { devnet: await startDevnet({ port, chainId }) };
    } catch (error) {
      if (!portTaken(error)) throw error;
      throw new UsageError(
        `--port ${port} is taken (another devnet or node?): pick another, or leave --port out for a free one`,
      );
    }
  }
  try {
    return { devnet: await startDevnet({ port: DEFAULT_PORT, chainId }) };
  } catch (error) {
    if (!portTaken(error)) throw error;
    // 8545 is taken (another node, another devnet): a free port, said out loud below.
    return { devnet: await startDevnet({ port: 0, chainId }), taken: DEFAULT_PORT };
  }
}

/** The files a devnet writes into its directory; a new devnet in the same --dir replaces them. */
const DEVNET_FILES = [
  "facilitator.key",
  "journal.jsonl",
  "request.json",
  "request-x402.json",
  "request-v1.json",
  "request-permit2.json",
  "request-permit2-eip2612.json",
  "request-permit.json",
  "request-permit2-approval.json",
  "request-upto.json",
  "devnet.env",
  "devnet.json",
];

/** The directory: --dir (emptied of an earlier devnet's files), or a new temporary one. */
async function prepareDir(
  dirFlag: string | undefined,
): Promise<{ dir: string; temporary: boolean }> {
  if (!dirFlag) {
    return { dir: await mkdtemp(path.join(os.tmpdir(), "facilitator-devnet-")), temporary: true };
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

/** `export NAME='value'` lines a shell can source (values quoted for the shell). */
function envFile(vars: Record<string, string>): string {
  const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;
  return `${Object.entries(vars)
    .map(([name, value]) => `export ${name}=${quote(value)}`)
    .join("\n")}\n`;
}

export interface Files {
  readonly dir: string;
  readonly keyFile: string;
  readonly journal: string;
  readonly request: string;
  readonly requestX402: string;
  readonly requestV1?: string | undefined;
  /** Permit2 payment of the permit token by payer 4, who approved Permit2 on it for this. */
  readonly requestPermit2: string;
  /** Permit2 payment of the permit token by payer 5, with the eip2612GasSponsoring extension. */
  readonly requestPermit2Eip2612: string;
  /** x402x-style EIP-2612 permit of the permit token by payer 3, our settlement key as spender. */
  readonly requestPermit: string;
  /** Permit2 payment of the plain token by payer 1, its approval signed for us to broadcast. */
  readonly requestPermit2Approval: string;
  /** upto: payer 4 authorizes up to 0.05 of the permit token; settle charges what was used. */
  readonly requestUpto: string;
  readonly envFile: string;
}

async function writeFiles(devnet: Devnet, dir: string, genesisHash: Hex): Promise<Files> {
  const keyFile = path.join(dir, "facilitator.key");
  // The key goes to a file only its owner can read; it is never printed.
  await writeFile(keyFile, `${devnet.facilitator.privateKey}\n`, { mode: 0o600 });
  await chmod(keyFile, 0o600);
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  const [payer1, payer2, payer3, payer4, payer5] = devnet.payers;
  if (!payer1 || !payer2 || !payer3 || !payer4 || !payer5) {
    throw new Error("the devnet has fewer than five payers");
  }

  const request = path.join(dir, "request.json");
  await writeFile(request, json(await signSampleRequest(devnet, { payer: payer1 })));
  const requestX402 = path.join(dir, "request-x402.json");
  await writeFile(
    requestX402,
    json(await signSampleRequest(devnet, { payer: payer2, dialect: "x402" })),
  );
  let requestV1: string | undefined;
  if (devnet.v1Network) {
    requestV1 = path.join(dir, "request-v1.json");
    await writeFile(
      requestV1,
      json(await signSampleRequest(devnet, { payer: payer3, x402Version: 1 })),
    );
  }
  // Payers start without any Permit2 approval; payer 4 approves it on the permit token, so this
  // request settles as is. Payer 5's request carries its approval as an EIP-2612 permit.
  await approvePermit2(devnet, payer4, devnet.permitToken.address);
  const requestPermit2 = path.join(dir, "request-permit2.json");
  await writeFile(
    requestPermit2,
    json(await signSampleRequest(devnet, { payer: payer4, method: "permit2", asset: "permit" })),
  );
  const requestPermit2Eip2612 = path.join(dir, "request-permit2-eip2612.json");
  await writeFile(
    requestPermit2Eip2612,
    json(
      await signSampleRequest(devnet, {
        payer: payer5,
        method: "permit2",
        asset: "permit",
        eip2612GasSponsoring: true,
      }),
    ),
  );
  const requestUpto = path.join(dir, "request-upto.json");
  await writeFile(requestUpto, json(await signUptoRequest(devnet, payer4)));
  const requestPermit = path.join(dir, "request-permit.json");
  await writeFile(requestPermit, json(await signPermitRequest(devnet, payer3)));
  // Payer 1 sends no transaction of its own, so its signed approval's nonce stays next.
  const requestPermit2Approval = path.join(dir, "request-permit2-approval.json");
  await writeFile(
    requestPermit2Approval,
    json(
      await signSampleRequest(devnet, {
        payer: payer1,
        method: "permit2",
        asset: "plain",
        erc20ApprovalGasSponsoring: true,
      }),
    ),
  );
  // The devnet's own journal: settles against it never mix with another chain's.
  const journal = path.join(dir, "journal.jsonl");
  const env = path.join(dir, "devnet.env");
  await writeFile(
    env,
    envFile({
      FACILITATOR_RPC_URL: devnet.rpcUrl,
      FACILITATOR_PRIVATE_KEY_FILE: keyFile,
      FACILITATOR_JOURNAL: journal,
    }),
  );
  await writeFile(
    path.join(dir, "devnet.json"),
    json({
      rpcUrl: devnet.rpcUrl,
      chainId: devnet.chainId,
      // What tells this devnet from the next one: see src/cli/devnet-marker.ts.
      genesisHash,
      network: devnet.network,
      v1Network: devnet.v1Network,
      token: devnet.token,
      permitToken: devnet.permitToken,
      plainToken: devnet.plainToken,
      multicall3: devnet.multicall3,
      permit2: devnet.permit2,
      exactPermit2Proxy: devnet.exactPermit2Proxy,
      uptoPermit2Proxy: devnet.uptoPermit2Proxy,
      walletFactory: devnet.walletFactory,
      facilitator: devnet.facilitator.address,
      payers: devnet.payers.map((p) => p.address),
      payee: devnet.payee.address,
      keyFile,
      journal,
      requests: {
        reference: request,
        x402: requestX402,
        v1: requestV1,
        permit2: requestPermit2,
        permit2Eip2612: requestPermit2Eip2612,
        permit: requestPermit,
        permit2Approval: requestPermit2Approval,
        upto: requestUpto,
      },
    }),
  );
  return {
    dir,
    keyFile,
    journal,
    request,
    requestX402,
    requestV1,
    requestPermit2,
    requestPermit2Eip2612,
    requestPermit,
    requestPermit2Approval,
    requestUpto,
    envFile: env,
  };
}

export async function runDevnet(flags: DevnetFlags): Promise<number> {
  const { devnet, taken } = await start(flags);
  let where: { dir: string; temporary: boolean } | undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await devnet.stop();
    // A temporary directory goes with the devnet: its key, journal and requests mean nothing now.
    if (where?.temporary) await rm(where.dir, { recursive: true, force: true });
  };
  try {
    if (taken !== undefined) {
      warn(
        `port ${taken} is taken (another devnet or node?): this devnet listens on ${devnet.rpcUrl}`,
      );
    }
    where = await prepareDir(flags.dir);
    const genesis = await createPublicClient({ transport: http(devnet.rpcUrl) }).getBlock({
      blockNumber: 0n,
    });
    const files = await writeFiles(devnet, where.dir, genesis.hash as Hex);
    if (flags.json) {
      const { dir, keyFile, journal, envFile, request, requestX402, requestV1 } = files;
      const { requestPermit2, requestPermit2Eip2612, requestPermit, requestPermit2Approval } =
        files;
      const { requestUpto } = files;
      process.stdout.write(
        `${JSON.stringify({ rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, genesisHash: genesis.hash, ...(taken ? { portTaken: taken } : {}), dir, keyFile, journal, envFile, request, requestX402, requestV1, requestPermit2, requestPermit2Eip2612, requestPermit, requestPermit2Approval, requestUpto })}\n`,
      );
    } else {
      process.stdout.write(
        `${devnetBanner(devnet, files, { taken, temporary: where.temporary })}\n`,
      );
    }
    if (flags.demo) {
      const { runDemo } = await import("../../devnet/demo.js");
      await runDemo(devnet);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  await new Promise<void>((resolve) => {
    const onSignal = () => resolve();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  });
  await stop();
  if (!flags.json) {
    process.stdout.write(
      where.temporary
        ? `devnet stopped; ${where.dir} removed\n`
        : `devnet stopped; its files stay in ${where.dir}\n`,
    );
  }
  return 0;
}
