/**
 * `facilitator devnet`: anvil with a test USDC and funded accounts, plus ready-signed request
 * files and the commands that use them. Runs until Ctrl-C and leaves no process behind.
 */
import { chmod, mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import chalk from "chalk";
import { type Devnet, startDevnet } from "../../devnet/index.js";
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
  const [payer1, payer2, payer3] = devnet.payers;
  if (!payer1 || !payer2 || !payer3) throw new Error("the devnet has fewer than three payers");

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
      facilitator: devnet.facilitator.address,
      payers: devnet.payers.map((p) => p.address),
      payee: devnet.payee.address,
      keyFile,
      requests: { reference: request, x402: requestX402, v1: requestV1 },
    }),
  );
  return { dir, keyFile, request, requestX402, requestV1, envFile };
}

function banner(devnet: Devnet, files: Files): string {
  const dim = chalk.dim;
  const b = chalk.bold;
  const lines = [
    `${chalk.green("●")} ${b("facilitator devnet")} is running ${dim("(Ctrl-C to stop)")}`,
    "",
    `  RPC URL      ${b(devnet.rpcUrl)}`,
    `  chain        ${devnet.network}${devnet.v1Network ? ` (v1: ${devnet.v1Network})` : ""}`,
    `  test USDC    ${devnet.token.address}  ${dim(`EIP-712 "${devnet.token.name}" version "${devnet.token.version}", 6 decimals`)}`,
    `  Multicall3   ${devnet.multicall3}`,
    `  facilitator  ${devnet.facilitator.address}  ${dim(`key in ${files.keyFile}`)}`,
    `  payers       ${devnet.payers.map((p) => p.address).join("\n               ")}  ${dim("1,000,000 USDC each")}`,
    `  payee        ${devnet.payee.address}`,
    "",
    `  signed requests  ${files.request}`,
    `                   ${files.requestX402} ${dim("(x402 dialect)")}`,
    ...(files.requestV1 ? [`                   ${files.requestV1} ${dim("(x402 v1)")}`] : []),
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
        `${JSON.stringify({ rpcUrl: devnet.rpcUrl, chainId: devnet.chainId, dir: files.dir, keyFile: files.keyFile, request: files.request, requestX402: files.requestX402, requestV1: files.requestV1 })}\n`,
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
