/** What a payment must move to be worth a transaction: more than 0, and the operator's minimum. */
import { type Failure, failure } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import { addressKey } from "../protocol/transaction-hash.js";
import type { Moved } from "./family.js";

/** An operator's minimum: `units` of `asset` on `network` (a CAIP-2 id), or on every network. */
export interface MinAmount {
  readonly network?: string | undefined;
  readonly asset: string;
  readonly units: bigint;
}

const keyOf = (network: string | undefined, asset: string) =>
  `${network ?? "*"} ${addressKey(asset)}`;

/** A decimal amount of units as requests carry it; undefined for anything else. */
export function unitsOf(text: unknown): bigint | undefined {
  return typeof text === "string" && /^[0-9]{1,78}$/.test(text) ? BigInt(text) : undefined;
}

/** `requirements.amount` (v1: maxAmountRequired) and its field; undefined when not decimal. */
export function requiredAmount(
  request: PaymentRequest,
): { readonly amount: bigint; readonly field: string } | undefined {
  const amount = unitsOf(request.requirements.amount);
  if (amount === undefined) return undefined;
  const name = request.x402Version === 1 ? "maxAmountRequired" : "amount";
  return { amount, field: `${request.paths.requirements}.${name}` };
}

export class AmountFloor {
  readonly #minimums = new Map<string, bigint>();

  constructor(minimums: readonly MinAmount[] = []) {
    for (const { network, asset, units } of minimums) {
      this.#minimums.set(keyOf(network, asset), units);
    }
  }

  /** The minimum for `asset` on `network`: the network's own, else the one for every network. */
  minimum(network: string, asset: string): bigint | undefined {
    return this.#minimums.get(keyOf(network, asset)) ?? this.#minimums.get(keyOf(undefined, asset));
  }

  /** `amount_too_small` for a payment of nothing or below the asset's minimum. */
  refusal(moved: Moved): Failure | undefined {
    if (moved.amount === 0n) {
      return failure(
        "amount_too_small",
        `${moved.field} is 0: a payment of nothing is neither verified nor settled here (it would cost a transaction and pay no one)`,
      );
    }
    const minimum = this.minimum(moved.network, moved.asset);
    if (minimum === undefined || moved.amount >= minimum) return undefined;
    return failure(
      "amount_too_small",
      `${moved.field} is ${moved.amount} units of ${moved.asset}; this facilitator settles at least ${minimum} units of it on ${moved.network}`,
    );
  }
}
