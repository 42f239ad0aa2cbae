/** The `upto` scheme as the tests pay it on the devnet: a seller's offer, the official client's payload. */
import { x402Client } from "@x402/core/client";
import { UptoEvmScheme as UptoEvmClient } from "@x402/evm/upto/client";
import { privateKeyToAccount } from "viem/accounts";
import type { DevAccount, Devnet } from "../../src/evm/devnet/index.js";

/** upto requirements for up to `max` of the devnet's permit token, settled by its facilitator. */
export function uptoOffer(devnet: Devnet, max = 5_000n) {
  return {
    scheme: "upto",
    network: devnet.network,
    amount: max.toString(),
    asset: devnet.permitToken.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 300,
    extra: {
      name: devnet.permitToken.name,
      version: devnet.permitToken.version,
      facilitatorAddress: devnet.facilitator.address,
    },
  };
}

/** The official upto client's payment for `requirements` (with the seller's declared extensions). */
export async function officialUptoPayload(
  devnet: Devnet,
  payer: DevAccount,
  requirements: ReturnType<typeof uptoOffer>,
  extensions?: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const client = x402Client.fromConfig({ schemes: [], spendControls: false });
  client.register(
    devnet.network,
    new UptoEvmClient(privateKeyToAccount(payer.privateKey), { rpcUrl: devnet.rpcUrl }),
  );
  return (await client.createPaymentPayload({
    x402Version: 2,
    resource: { url: "http://localhost/metered" },
    accepts: [requirements],
    ...(extensions ? { extensions } : {}),
  } as never)) as unknown as Record<string, unknown>;
}
