/** What `facilitator devnet` prints: the banner, then what to try, the line to copy last. */
import path from "node:path";
import { fileURLToPath } from "node:url";
import chalk from "chalk";
import { receiverAuthorizerAccount } from "../../../evm/devnet/accounts.js";
import type { Devnet } from "../../../evm/devnet/index.js";
import {
  type EvmFiles,
  type Files,
  REQUEST_KEYS,
  REQUEST_NOTES,
  type Running,
} from "./devnet-files.js";
import { svmBanner } from "./devnet-svm-banner.js";

const { dim, bold: b } = chalk;

export function devnetBanner(running: Running, files: Files, temporary: boolean): string {
  const { devnet, svm } = running;
  const lines = [
    `${chalk.green("●")} ${b("facilitator devnet")} is running ${dim("(Ctrl-C to stop)")}`,
    "",
    ...(devnet && files.evm ? evmLines(devnet, files.evm, running.taken) : []),
    ...(svm && files.svm
      ? svmBanner(svm, files.svm, { taken: running.svmTaken, dirKept: !temporary })
      : []),
    `  directory    ${files.dir}  ${dim(temporary ? "(removed when the devnet stops)" : "(kept)")}`,
    `  journal      ${files.journal}  ${dim("this devnet's own")}`,
    "",
  ];
  return lines.join("\n");
}

/** What to try in another terminal; devnet.env's line last, as it comes first there. */
export function tryLines(running: Running, files: Files): string {
  const { devnet, svm } = running;
  const both = Boolean(devnet && svm);
  // `npx facilitator` in a clone; plain `facilitator` once installed (npx would fetch another's).
  const installed = fileURLToPath(import.meta.url)
    .split(path.sep)
    .includes("node_modules");
  const [cli, where] = installed ? ["facilitator", ""] : ["npx facilitator", " in this project"];
  return [
    `  Try, in another terminal${where}:`,
    ...(files.evm
      ? [
          // With both clusters, pay must be told which one.
          `    ${cli} pay${both && devnet ? ` --network ${devnet.network}` : ""} --amount 0.01 | ${cli} settle -`,
          `    ${cli} verify ${files.evm.request}`,
          `    ${cli} settle ${files.evm.request}`,
          `    ${cli} settle ${files.evm.request}   ${dim("# again: nonce_already_used")}`,
        ]
      : []),
    ...(files.svm
      ? [
          `    ${cli} pay${both ? " --network solana-devnet" : ""} --amount 0.01 | ${cli} settle -`,
          `    ${cli} verify ${files.svm.request}`,
          `    ${cli} settle ${files.svm.request}`,
        ]
      : []),
    `    ${cli} doctor`,
    `  First, in that terminal, point the commands at this devnet ${dim(`(its RPC${both ? "s" : ""}, key${both ? "s" : ""} and journal)`)}:`,
    `    source ${files.envFile}`,
  ].join("\n");
}

function evmLines(devnet: Devnet, files: EvmFiles, taken: number | undefined): string[] {
  return [
    `  RPC URL      ${b(devnet.rpcUrl)}${taken ? `  ${chalk.yellow(`(port ${taken} is taken)`)}` : ""}`,
    `  chain        ${devnet.network}${devnet.v1Network ? ` (v1: ${devnet.v1Network})` : ""}`,
    `  test USDC    ${devnet.token.address}  ${dim(`EIP-712 "${devnet.token.name}" version "${devnet.token.version}", 6 decimals, EIP-3009 + EIP-2612`)}`,
    `  permit token ${devnet.permitToken.address}  ${dim(`EIP-712 "${devnet.permitToken.name}" version "${devnet.permitToken.version}", 6 decimals, EIP-2612 only`)}`,
    `  plain token  ${devnet.plainToken.address}  ${dim("plain ERC-20, 6 decimals")}`,
    `  Permit2      ${devnet.permit2}  ${dim("payers have not approved it")}`,
    `  x402 proxies ${devnet.exactPermit2Proxy} ${dim("(exact)")}`,
    `               ${devnet.uptoPermit2Proxy} ${dim("(upto)")}`,
    `  batch        ${devnet.batchSettlement.settlement} ${dim("(x402 batch-settlement)")}`,
    `               ${devnet.batchSettlement.erc3009Collector} ${dim("(EIP-3009 deposit collector)")}`,
    `               ${devnet.batchSettlement.permit2Collector} ${dim("(Permit2 deposit collector)")}`,
    `               ${receiverAuthorizerAccount.address} ${dim(`(receiver authorizer: settle and serve sign claims and refunds; key in ${files.receiverAuthorizerKeyFile})`)}`,
    `  wallets      ${devnet.walletFactory}  ${dim("ERC-6492 smart-wallet factory")}`,
    `  Multicall3   ${devnet.multicall3}`,
    `  facilitator  ${devnet.facilitator.address}  ${dim(`key in ${files.keyFile}`)}`,
    `  payers       ${devnet.payers.map((p) => p.address).join("\n               ")}  ${dim("1,000,000 of each token")}`,
    `  payee        ${devnet.payee.address}`,
    ...REQUEST_KEYS.filter((key) => files[key] !== undefined).map(
      (key, i) =>
        `${i === 0 ? "  signed requests  " : " ".repeat(19)}${files[key]}${REQUEST_NOTES[key] ? ` ${dim(REQUEST_NOTES[key])}` : ""}`,
    ),
    "",
  ];
}
