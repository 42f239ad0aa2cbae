/** The banner's Solana section (no Solana code: the banner loads for anvil-only runs too). */
import chalk from "chalk";
import type { SvmDevnet } from "../../../svm/devnet/index.js";
import type { SvmFiles } from "./devnet-files.js";

/** How often request-svm.json is signed again (its blockhash expires after ~60 s at 400 ms). */
export const REFRESH_MS = 20_000;

const { dim, bold: b } = chalk;

export function svmBanner(
  svm: SvmDevnet,
  files: SvmFiles,
  options: { taken?: number | undefined; dirKept: boolean },
): string[] {
  const seconds = REFRESH_MS / 1000;
  return [
    `  ${b("Solana")}`,
    `  RPC URL      ${b(svm.rpcUrl)}${options.taken ? `  ${chalk.yellow(`(port ${options.taken} is taken)`)}` : ""}`,
    `  network      ${svm.network}  ${dim("(answers as Solana devnet)")}`,
    `  test USDC    ${svm.mint.address}  ${dim(`SPL Token mint, ${svm.mint.decimals} decimals`)}`,
    `  fee payer    ${svm.feePayer.address}  ${dim(`key in ${files.keyFile}`)}`,
    `  payers       ${svm.payers.map((p) => p.address).join("\n               ")}  ${dim("1,000 test USDC and 10 SOL each at first")}`,
    `  payee        ${svm.payee.address}`,
    `  signed request  ${files.request}  ${dim(`(signed again every ${seconds} s: a blockhash lives ~60 s)`)}`,
    ...(options.dirKept
      ? [`  ${dim("the cluster's state is kept in the directory between runs")}`]
      : []),
    "",
  ];
}
