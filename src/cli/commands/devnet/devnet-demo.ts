/** `facilitator devnet --demo`: one payment through verify, settle and a replayed settle. */
import chalk from "chalk";
import { privateKeyToAccount } from "viem/accounts";
import { signSampleRequest } from "../../../evm/devnet/sample.js";
import type { DevnetInfo } from "../../../evm/devnet/setup.js";
import { Facilitator } from "../../../facilitator.js";
import { handleSettle, handleVerify } from "../../../protocol/respond.js";

export async function runDemo(devnet: DevnetInfo): Promise<void> {
  const payer = devnet.payers[devnet.payers.length - 1];
  if (!payer) throw new Error("the devnet has no payers");
  const facilitator = new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
  });
  const request = await signSampleRequest(devnet, { payer });
  const show = (title: string, body: unknown) =>
    process.stdout.write(`${chalk.bold(title)}\n${JSON.stringify(body, null, 2)}\n\n`);

  process.stdout.write(
    `${chalk.cyan("demo")}: 0.01 USDC from ${payer.address} to ${devnet.payee.address}\n\n`,
  );
  show("verify  →", (await handleVerify(facilitator, request)).body);
  show("settle  →", (await handleSettle(facilitator, request, { waitUntil: "confirmed" })).body);
  show("settle again (same authorization)  →", (await handleSettle(facilitator, request)).body);
}
