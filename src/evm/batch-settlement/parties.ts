/**
 * Who a batch-settlement request names, for the deny list: each channel's payer (and the key that
 * signs its vouchers) and receiver, in the channel config of a deposit, voucher or refund and in
 * every claim; the receiver a settle sweeps for; the Permit2 signer of a deposit.
 */
import type { Parties } from "../../deny-list/deny-list.js";
import type { PaymentRequest } from "../../protocol/request.js";

const field = (node: unknown, key: string): unknown =>
  typeof node === "object" && node !== null ? (node as Record<string, unknown>)[key] : undefined;

export function channelParties(request: PaymentRequest): Parties {
  const payers: string[] = [];
  const payees: string[] = [];
  const add = (list: string[], value: unknown) => {
    if (typeof value === "string") list.push(value);
  };
  const channel = (config: unknown) => {
    add(payers, field(config, "payer"));
    add(payers, field(config, "payerAuthorizer"));
    add(payees, field(config, "receiver"));
  };
  const { payload } = request;
  channel(payload.channelConfig);
  const claims = payload.claims;
  if (Array.isArray(claims))
    for (const claim of claims) channel(field(field(claim, "voucher"), "channel"));
  add(payees, payload.receiver);
  add(
    payers,
    field(field(field(payload.deposit, "authorization"), "permit2Authorization"), "from"),
  );
  return { payers, payees };
}
