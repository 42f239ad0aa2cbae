/**
 * bench:batch's first measurement, gas per paid request: for each deposit method, N (vouchers per
 * channel) and facilitator, K fresh payers each open a channel (the official client's deposit,
 * verified then settled), pay N-1 more vouchers (verified, no transaction), then one claim of all
 * K channels and one settle; the gas comes from the receipts. Beside it, one `exact` EIP-3009
 * transfer per facilitator on the same devnet.
 */
import type { DevAccount, Devnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { gasUsed } from "./batch-chain-reads.js";
import { claimAndSettle, openChannels } from "./batch-channel-actions.js";
import { type Method, PRICE, requirementsFor } from "./batch-channel-payloads.js";
import { fail, failures, log } from "./batch-run-log.js";
import type { Target } from "./batch-server-processes.js";
import { EXACT_AMOUNT, NS } from "./batch-settings.js";
import { settleAt, verifyAt, x402Body } from "./batch-x402-http.js";

/** One round's receipts: K deposits, the claim of K channels, the settle. */
export interface GasRound {
  readonly facilitator: Target["name"];
  readonly method: Method;
  readonly n: number;
  readonly k: number;
  readonly deposits: readonly bigint[];
  readonly claim: bigint;
  readonly settle: bigint;
}

/** One gas round: K channels, N vouchers each, one claim, one settle. */
export async function gasRound(
  chain: Devnet,
  target: Target,
  authorizer: DevAccount,
  payers: readonly DevAccount[],
  n: number,
  method: Method,
): Promise<GasRound | undefined> {
  const where = `gas ${target.name} ${method} N=${n}`;
  const accepted = requirementsFor(chain, authorizer, method);
  const failed = failures.length;
  const { channels, hashes } = await openChannels(
    chain,
    target,
    payers,
    accepted,
    BigInt(n) * PRICE,
    payers.length,
    where,
  );
  // N-1 more vouchers per channel, each channel's in order, all channels at once.
  await Promise.all(
    channels.map(async (channel) => {
      for (let i = 2; i <= n; i++) {
        const payment = await channel.sign(BigInt(i) * PRICE);
        const verified = await verifyAt(target, x402Body(payment, accepted));
        if (!verified.ok) {
          fail(where, `voucher ${i}: ${verified.error}`);
          return;
        }
      }
    }),
  );
  const sent = await claimAndSettle(chain, target, channels, accepted, where);
  if (failures.length > failed || !sent.claim || !sent.settle) return undefined;
  return {
    facilitator: target.name,
    method,
    n,
    k: channels.length,
    deposits: await Promise.all(hashes.map((h) => gasUsed(chain, h, where))),
    claim: await gasUsed(chain, sent.claim, where),
    settle: await gasUsed(chain, sent.settle, where),
  };
}

/** One exact payment (verify, then settle confirmed): its transaction's gas. */
export async function exactGas(chain: Devnet, target: Target, payer: DevAccount) {
  const where = `exact gas ${target.name}`;
  const body = JSON.stringify({
    ...(await signSampleRequest(chain, { payer, amount: EXACT_AMOUNT, dialect: "x402" })),
    waitUntil: "confirmed",
  });
  const verified = await verifyAt(target, body);
  if (!verified.ok) return fail(where, `verify: ${verified.error}`);
  const settled = await settleAt(target, body);
  if (!settled.ok || !settled.hash) return fail(where, `settle: ${settled.error}`);
  return gasUsed(chain, settled.hash, where);
}

/**
 * An exact transfer's gas per facilitator, then every gas round (each method, each N, each
 * facilitator in turn), `roundPayers` holding each round's K payers.
 */
export async function measureGas(
  devnet: Devnet,
  targets: readonly Target[],
  authorizer: DevAccount,
  roundPayers: ReadonlyMap<string, readonly DevAccount[]>,
  methods: readonly Method[],
): Promise<{ exact: Map<string, bigint>; rounds: GasRound[] }> {
  const exact = new Map<string, bigint>();
  for (const target of targets) {
    const gas = await exactGas(devnet, target, devnet.payers[1] as DevAccount);
    if (gas !== undefined) exact.set(target.name, gas);
  }
  const rounds: GasRound[] = [];
  for (const method of methods) {
    for (const n of NS) {
      for (const target of targets) {
        const t = performance.now();
        const payers = roundPayers.get(`${target.name} ${method} ${n}`) ?? [];
        const round = await gasRound(devnet, target, authorizer, payers, n, method);
        if (round) rounds.push(round);
        log(
          `gas ${target.name} ${method} N=${n}: ${((performance.now() - t) / 1000).toFixed(1)} s`,
        );
      }
    }
  }
  return { exact, rounds };
}
