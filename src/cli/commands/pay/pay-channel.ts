/** `pay --claim | --sweep | --refund`: the seller's side of a channel; settle signs, not this. */
import { type Address, getContract, type Hex, type PublicClient } from "viem";
import { channelIdOf } from "../../../evm/batch-settlement/channel.js";
import {
  BATCH_SETTLEMENT,
  SETTLEMENT_ABI,
  SETTLEMENT_ADDRESS,
} from "../../../evm/batch-settlement/constants.js";
import { voucherSchema } from "../../../evm/batch-settlement/payload.js";
import { type RequirementsJson, requestBody } from "../../../evm/client/sign-payment.js";
import { payeeAccount } from "../../../evm/devnet/accounts.js";
import { isDevnetChain } from "../../../evm/devnet/detect.js";
import { usdcAddressFor } from "../../../evm/devnet/setup.js";
import { type TokenUnits, tokenAmount } from "../../../protocol/amounts.js";
import { caip2, chainIdOfCaip2 } from "../../../protocol/networks.js";
import type { RpcRegistry } from "../../../rpc/rpc.js";
import { UsageError } from "../../io/errors.js";
import { readRequest } from "../../io/input.js";
import { warn } from "../../io/output.js";
import { payToken } from "./pay-amounts.js";
import type { PayFlags } from "./pay-flags.js";
import { address } from "./pay-payer.js";
import { requirementsFile, targetOf } from "./pay-requirements.js";

export function channelActionOf(flags: PayFlags): "--claim" | "--sweep" | "--refund" | undefined {
  const asked = [
    flags.claim && flags.claim.length > 0 ? ("--claim" as const) : undefined,
    flags.sweep ? ("--sweep" as const) : undefined,
    flags.refund !== undefined ? ("--refund" as const) : undefined,
  ].filter((action) => action !== undefined);
  if (asked.length > 1) throw new UsageError(`${asked.join(" and ")}: pick one`);
  return asked[0];
}

/** pay's flags that sign a payment, which a channel action has no use for. */
const PAYMENT_FLAGS = {
  amount: "--amount",
  method: "--method",
  deposit: "--deposit",
  cumulative: "--cumulative",
  receiverAuthorizer: "--receiver-authorizer",
  approval: "--approval",
  payerKeyFile: "--payer-key-file",
  payer: "--payer",
  feePayer: "--fee-payer",
  validFor: "--valid-for",
  v1: "--v1",
} as const;

/** What names the payment: --sweep takes the receiver and token from these, the others none. */
const SWEEP_FLAGS = {
  requirements: "--requirements",
  to: "--to",
  asset: "--asset",
  network: "--network",
} as const;

/** A voucher the seller holds: its channel, amount and the payer's signature, on its chain. */
type HeldVoucher = Awaited<ReturnType<typeof readVoucher>>;

/** The voucher in a deposit or voucher request (either dialect), checked against its channel. */
async function readVoucher(file: string, flag: string) {
  const source = file === "-" ? "stdin" : file;
  const { payloadScheme, payloadNetwork, payload } = await readRequest(file, `${flag} ${source}`);
  const chainId = chainIdOfCaip2(payloadNetwork);
  const voucher = voucherSchema.safeParse({ ...payload, type: "voucher" });
  if (payloadScheme !== BATCH_SETTLEMENT || chainId === undefined || !voucher.success) {
    throw new UsageError(
      `${flag} ${source} holds no batch-settlement voucher: it takes a deposit or voucher request, as pay --scheme batch-settlement prints it`,
    );
  }
  const { channelConfig: config, voucher: signed } = voucher.data;
  const channelId = channelIdOf(config, chainId);
  if (signed.channelId.toLowerCase() !== channelId.toLowerCase()) {
    throw new UsageError(`${flag} ${source}: the voucher's channelId is not its channelConfig's`);
  }
  return {
    chainId,
    config,
    channelId,
    maxClaimable: signed.maxClaimableAmount,
    signature: signed.signature as Hex,
  };
}

/** The request a seller's channel manager sends with a claim, settle or refund. */
function channelRequest(
  x402: boolean,
  chainId: number,
  { receiver, token }: { readonly receiver: Address; readonly token: Address },
  payload: unknown,
) {
  const requirements: RequirementsJson = {
    scheme: BATCH_SETTLEMENT,
    network: caip2(chainId),
    asset: token,
    amount: "0",
    payTo: receiver,
    maxTimeoutSeconds: 0,
    extra: {},
  };
  const paymentPayload = { x402Version: 2, accepted: requirements, payload };
  return requestBody(x402 ? "x402" : "reference", 2, paymentPayload, requirements);
}

/** A claim row: the voucher's whole amount, with the payer's signature over it. */
const claimRow = (held: HeldVoucher) => ({
  voucher: { channel: held.config, maxClaimableAmount: held.maxClaimable.toString() },
  signature: held.signature,
  totalClaimed: held.maxClaimable.toString(),
});

export const settlementReads = (client: PublicClient) =>
  getContract({ address: SETTLEMENT_ADDRESS, abi: SETTLEMENT_ABI, client }).read;

async function channelOnChain(client: PublicClient, channelId: Hex) {
  const read = settlementReads(client);
  const [[balance, totalClaimed], refundNonce] = await Promise.all([
    read.channels([channelId]),
    read.refundNonce([channelId]),
  ]);
  return { balance, totalClaimed, refundNonce };
}

type Built = { readonly body: unknown; readonly line: string };

/** The token's decimals and symbol for the line people read; units alone when it cannot say. */
const tokenOf = (token: Address, chainId: number, client: PublicClient, devnet = false) =>
  payToken(token, chainId, async () => client, devnet).catch(
    (): TokenUnits | undefined => undefined,
  );

/** One claim of the newest voucher of each channel given; one transaction at settle. */
async function buildClaim(flags: PayFlags, rpc: RpcRegistry): Promise<Built> {
  const given: HeldVoucher[] = [];
  for (const file of flags.claim ?? []) given.push(await readVoucher(file, "--claim"));
  const id = given[0]?.chainId;
  if (id === undefined) throw new UsageError("--claim needs a voucher request");
  if (given.some((held) => held.chainId !== id)) {
    throw new UsageError("--claim: the vouchers are on different chains; claim each chain apart");
  }
  const newest = new Map<Hex, HeldVoucher>();
  for (const held of given) {
    const known = newest.get(held.channelId);
    if (!known || held.maxClaimable > known.maxClaimable) newest.set(held.channelId, held);
  }
  const vouchers = [...newest.values()];
  const first = vouchers[0] as HeldVoucher;
  const client = await rpc.client(id);
  const states = await Promise.all(vouchers.map((v) => channelOnChain(client, v.channelId)));
  const tokens = await Promise.all(vouchers.map((v) => tokenOf(v.config.token, id, client)));
  const described = vouchers.map((held, i) => {
    const token = tokens[i];
    const claimed = states[i]?.totalClaimed ?? 0n;
    if (held.maxClaimable <= claimed && !flags.quiet) {
      warn(
        `channel ${held.channelId} has ${tokenAmount(claimed, token)} claimed already: this voucher adds nothing (settle answers nothing_to_settle when no channel of the claim moves)`,
      );
    }
    const before = claimed > 0n ? ` (${tokenAmount(claimed, token)} claimed before)` : "";
    return `channel ${held.channelId} up to ${tokenAmount(held.maxClaimable, token)}${before}`;
  });
  const receivers = new Set(vouchers.map((v) => v.config.receiver));
  const forWhom = receivers.size === 1 ? `, for ${first.config.receiver}` : "";
  const payload = { type: "claim", claims: vouchers.map(claimRow) };
  return {
    body: channelRequest(flags.x402 === true, id, first.config, payload),
    line: `a claim of ${described.join("; ")}${forWhom} on ${caip2(id)}`,
  };
}

/** The channel's unclaimed rest back to its payer, the voucher claimed first when it is not yet. */
async function buildRefund(flags: PayFlags, rpc: RpcRegistry): Promise<Built> {
  const held = await readVoucher(flags.refund ?? "-", "--refund");
  const client = await rpc.client(held.chainId);
  const state = await channelOnChain(client, held.channelId);
  const token = await tokenOf(held.config.token, held.chainId, client);
  const claimFirst = held.maxClaimable > state.totalClaimed;
  const claimed = claimFirst ? held.maxClaimable : state.totalClaimed;
  if (state.balance <= claimed) {
    throw new UsageError(
      `nothing is left to refund in channel ${held.channelId}: it holds ${tokenAmount(state.balance, token)}, ${tokenAmount(claimed, token)} of it claimed${claimFirst ? " with this voucher" : ""}`,
    );
  }
  const amount = state.balance - claimed;
  const payload = {
    type: "refund",
    channelConfig: held.config,
    voucher: {
      channelId: held.channelId,
      maxClaimableAmount: held.maxClaimable.toString(),
      signature: held.signature,
    },
    amount: amount.toString(),
    refundNonce: state.refundNonce.toString(),
    claims: claimFirst ? [claimRow(held)] : [],
  };
  return {
    body: channelRequest(flags.x402 === true, held.chainId, held.config, payload),
    line: `a refund of ${tokenAmount(amount, token)} to the payer ${held.config.payer} from channel ${held.channelId}${claimFirst ? `, its voucher for ${tokenAmount(held.maxClaimable, token)} claimed first` : ""}, on ${caip2(held.chainId)}`,
  };
}

/** What the receiver claimed and was not paid yet, swept to it: --to/--asset, else the devnet's. */
async function buildSweep(flags: PayFlags, rpc: RpcRegistry): Promise<Built> {
  const fromFile = (await requirementsFile(flags, BATCH_SETTLEMENT))?.requirements;
  const target = await targetOf(flags.network ?? fromFile?.network, rpc, BATCH_SETTLEMENT);
  if (target.kind !== "evm") throw new UsageError("batch-settlement is served on EVM chains only");
  const { chainId } = target;
  const client = await rpc.client(chainId);
  const named = (value: string | undefined, flag: string) =>
    value === undefined ? undefined : address(value, flag);
  let receiver = named(flags.to ?? fromFile?.payTo, "--to");
  let token = named(flags.asset ?? fromFile?.asset, "--asset");
  const devnet = !receiver || !token ? await isDevnetChain(client, chainId) : false;
  if (devnet) {
    receiver ??= payeeAccount.address;
    token ??= usdcAddressFor(chainId);
  }
  if (!receiver || !token) {
    throw new UsageError(
      `--sweep needs --to (the receiver) and --asset (the token): the chain eip155:${chainId} is no devnet with defaults`,
    );
  }
  const [claimed, settled] = await settlementReads(client).receivers([receiver, token]);
  const units = await tokenOf(token, chainId, client, devnet);
  const owed = claimed > settled ? claimed - settled : 0n;
  if (claimed <= settled && !flags.quiet) {
    warn(
      `${receiver} has nothing claimed and not yet swept in ${token} (claimed ${tokenAmount(claimed, units)}, swept ${tokenAmount(settled, units)}): settle answers nothing_to_settle until a claim lands`,
    );
  }
  const payload = { type: "settle", receiver, token };
  return {
    body: channelRequest(flags.x402 === true, chainId, { receiver, token }, payload),
    line: `a sweep of ${tokenAmount(owed, units)} of ${token} that ${receiver} claimed, to it, on ${caip2(chainId)}`,
  };
}

export async function buildChannelRequest(
  action: "--claim" | "--sweep" | "--refund",
  flags: PayFlags,
  rpc: RpcRegistry,
): Promise<Built> {
  const unused = { ...PAYMENT_FLAGS, ...(action === "--sweep" ? {} : SWEEP_FLAGS) };
  const misplaced: string[] = Object.entries(unused)
    .filter(([key]) => flags[key as keyof typeof unused] !== undefined)
    .map(([, flag]) => flag);
  if (flags.scheme !== undefined && flags.scheme !== BATCH_SETTLEMENT) misplaced.push("--scheme");
  if (misplaced.length > 0) {
    const what = action === "--sweep" ? "the receiver and token" : "the voucher's request";
    throw new UsageError(
      `${misplaced.join(", ")}: not with ${action}, which takes ${what} (and --x402)`,
    );
  }
  const build = { "--claim": buildClaim, "--refund": buildRefund, "--sweep": buildSweep }[action];
  return build(flags, rpc);
}
