/**
 * `facilitator devnet`: anvil with test tokens, Permit2 and the x402 proxies, and funded accounts,
 * plus ready-signed request files and the commands that use them. Runs until Ctrl-C and leaves no
 * process behind.
 */
import { chmod, mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import chalk from "chalk";
import { approvePermit2, type Devnet, startDevnet } from "../../devnet/index.js";
import { signSampleRequest } from "../../devnet/sample.js";
import { UsageError } from "../errors.js";

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

async function start(flags: DevnetFlags): Promise<Devnet> {
  const chainId = parseWhole(flags.chainId ?? "31337", "--chain-id", 2 ** 53 - 1);
  if (chainId === 0) throw new UsageError("--chain-id must be positive");
  if (flags.port !== undefined) {
    return startDevnet({ port: parseWhole(flags.port, "--port", 65535), chainId });
  }
  try {
    return await startDevnet({ port: DEFAULT_PORT, chainId });
  } catch {
    // 8545 is taken (another node, another devnet): any free port will do.
    return startDevnet({ port: 0, chainId });
  }
}

interface Files {
  readonly dir: string;
  readonly keyFile: string;
  readonly request: string;
  readonly requestX402: string;
  readonly requestV1?: string | undefined;
  /** Permit2 payment of the permit token by payer 4, who approved Permit2 on it for this. */
  readonly requestPermit2: string;
  /** Permit2 payment of the permit token by payer 5, with the eip2612GasSponsoring extension. */
  readonly requestPermit2Eip2612: string;
  readonly envFile: string;
}

async function writeFiles(devnet: Devnet, dirFlag: string | undefined): Promise<Files> {
  const dir = dirFlag
    ? path.resolve(dirFlag)
    : await mkdtemp(path.join(os.tmpdir(), "facilitator-devnet-"));
  await mkdir(dir, { recursive: true });
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
  const envFile = path.join(dir, "devnet.env");
  await writeFile(
    envFile,
    `FACILITATOR_RPC_URL=${devnet.rpcUrl}\nFACILITATOR_PRIVATE_KEY_FILE=${keyFile}\n`,
  );
  await writeFile(
    path.join(dir, "devnet.json"),
    json({
      rpcUrl: devnet.rpcUrl,
      chainId: devnet.chainId,
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
      requests: {
        reference: request,
        x402: requestX402,
        v1: requestV1,
        permit2: requestPermit2,
        permit2Eip2612: requestPermit2Eip2612,
      },
    }),
  );
  return {
    dir,
    keyFile,
    request,
    requestX402,
    requestV1,
    requestPermit2,
    requestPermit2Eip2612,
    envFile,
  };
}

function banner(devnet: Devnet, files: Files): string {
  const dim = chalk.dim;
  const b = chalk.bold;
  const lines = [
    `${chalk.green("●")} ${b("facilitator devnet")} is running ${dim("(Ctrl-C to stop)")}`,
    "",
    `  RPC URL      ${b(devnet.rpcUrl)}`,
    `  chain        ${devnet.network}${devnet.v1Network ? ` (v1: ${devnet.v1Network})` : ""}`,
    `  test USDC    ${devnet.token.address}  ${dim(`EIP-712 "${devnet.token.name}" version "${devnet.token.version}", 6 decimals, EIP-3009 + EIP-2612`)}`,
    `  permit token ${devnet.permitToken.address}  ${dim(`EIP-712 "${devnet.permitToken.name}" version "${devnet.permitToken.version}", 6 decimals, EIP-2612 only`)}`,
    `  plain token  ${devnet.plainToken.address}  ${dim("plain ERC-20, 6 decimals")}`,
    `  Permit2      ${devnet.permit2}  ${dim("payers have not approved it")}`,
    `  x402 proxies ${devnet.exactPermit2Proxy} ${dim("(exact)")}`,
    `               ${devnet.uptoPermit2Proxy} ${dim("(upto)")}`,
    `  wallets      ${devnet.walletFactory}  ${dim("ERC-6492 smart-wallet factory")}`,
    `  Multicall3   ${devnet.multicall3}`,
    `  facilitator  ${devnet.facilitator.address}  ${dim(`key in ${files.keyFile}`)}`,
    `  payers       ${devnet.payers.map((p) => p.address).join("\n               ")}  ${dim("1,000,000 of each token")}`,
    `  payee        ${devnet.payee.address}`,
    "",
    `  signed requests  ${files.request}`,
    `                   ${files.requestX402} ${dim("(x402 dialect)")}`,
    ...(files.requestV1 ? [`                   ${files.requestV1} ${dim("(x402 v1)")}`] : []),
    `                   ${files.requestPermit2} ${dim("(Permit2; payer 4 approved Permit2)")}`,
    `                   ${files.requestPermit2Eip2612} ${dim("(Permit2 + eip2612GasSponsoring)")}`,
    "",
    `  Try, in another terminal in this project:`,
    `    export FACILITATOR_RPC_URL=${devnet.rpcUrl}`,
    `    npx facilitator verify ${files.request}`,
    `    npx facilitator settle ${files.request} --private-key-file ${files.keyFile}`,
    `    npx facilitator settle ${files.request} --private-key-file ${files.keyFile}   ${dim("# again: nonce_already_used")}`,
    "",
  ];
  return lines.join("\n");
}

export async function runDevnet(flags: DevnetFlags): Promise<number> {
  const devnet = await start(flags);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await devnet.stop();
  };
  try {
    const files = await writeFiles(devnet, flags.dir);
    if (flags.json) {
      process.stdout.write(
        `${JSON.stringify({ rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, dir: files.dir, keyFile: files.keyFile, request: files.request, requestX402: files.requestX402, requestV1: files.requestV1, requestPermit2: files.requestPermit2, requestPermit2Eip2612: files.requestPermit2Eip2612 })}\n`,
      );
    } else {
      process.stdout.write(`${banner(devnet, files)}\n`);
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
  if (!flags.json) process.stdout.write("devnet stopped\n");
  return 0;
}
