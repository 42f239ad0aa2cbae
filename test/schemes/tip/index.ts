/**
 * A scheme made for the tests, to show what adding one takes: this folder, and one registration
 * line where the facilitator is made (`schemes: [...EVM_SCHEMES, tipScheme]`). "tip" pays a fixed
 * EIP-3009 transfer, as `exact` does, under its own name, and lists itself on /supported with what
 * a buyer needs to know; /accepts completes its offers as `exact` completes its own.
 */

import { completeExact } from "../../../src/evm/exact/accepts.js";
import { eip3009 } from "../../../src/evm/exact/eip3009.js";
import type { EvmScheme } from "../../../src/evm/scheme.js";
import { failure } from "../../../src/protocol/errors.js";
import { caip2 } from "../../../src/protocol/networks.js";

export const TIP = "tip";

export const tipScheme: EvmScheme = {
  name: TIP,
  method(request) {
    if (request.x402Version !== 2) return failure("unsupported_version", "tips are x402 v2 only");
    return eip3009.accepts(request.payload)
      ? eip3009
      : failure("invalid_request", "a tip is an EIP-3009 authorization");
  },
  kinds: (chainId) => [
    { x402Version: 2, scheme: TIP, network: caip2(chainId), extra: { note: "a tip, once" } },
  ],
  complete: completeExact,
};
