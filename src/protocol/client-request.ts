/** What a buyer's signed request is made of, whatever the chain: the requirements it answers. */

/** The PaymentRequirements the payment answers, in their version's shape (echoed as is). */
export type RequirementsJson = Record<string, unknown> & {
  readonly scheme: string;
  readonly network: string;
  readonly asset: string;
  readonly payTo: string;
  readonly maxTimeoutSeconds?: number;
  readonly extra?: Record<string, unknown> | null;
};

/** v2's `resource` when none is given: the devnet's example. */
export const DEFAULT_RESOURCE = {
  url: "http://localhost:4021/weather",
  description: "devnet example",
  mimeType: "application/json",
};
