/** The facilitator the chain-backed tests settle with: the devnet's RPC and settlement key. */
import { privateKeyToAccount } from "viem/accounts";
import type { Devnet } from "../../src/devnet/index.js";
import { Facilitator, type FacilitatorOptions } from "../../src/facilitator.js";

export function facilitatorOn(devnet: Devnet, options: Partial<FacilitatorOptions> = {}) {
  return new Facilitator({
    rpcUrls: [devnet.rpcUrl],
    useDefaultRpcs: false,
    signer: privateKeyToAccount(devnet.facilitator.privateKey),
    receiptPollMs: 50,
    ...options,
  });
}
