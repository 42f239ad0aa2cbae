/** A ready `upto` request: payer 4 allows up to 0.05, naming the devnet's settlement key. */
import type { DevAccount } from "./accounts.js";
import type { DevnetInfo } from "./setup.js";
import { signUptoPermit2Payment } from "./sign-permit2.js";

export async function signUptoRequest(devnet: DevnetInfo, payer: DevAccount, max = 50_000n) {
  const token = devnet.permitToken;
  const requirements = {
    scheme: "upto",
    network: devnet.network,
    amount: max.toString(),
    asset: token.address,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: 24 * 3600,
    extra: {
      name: token.name,
      version: token.version,
      facilitatorAddress: devnet.facilitator.address,
    },
  };
  const payload = await signUptoPermit2Payment(devnet.chainId, payer, {
    asset: token.address,
    amount: max,
    payTo: devnet.payee.address,
    maxTimeoutSeconds: requirements.maxTimeoutSeconds,
    facilitator: devnet.facilitator.address,
  });
  return {
    payload: {
      x402Version: 2,
      resource: { url: "http://localhost:4021/metered" },
      accepted: requirements,
      payload,
    },
    requirements,
  };
}
