/** A settle's turn with its keys, then a wait for their pool transactions we did not record. */
import type { PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Facilitator } from "../../facilitator.js";
import { FacilitatorError, type Failure, failure } from "../../protocol/errors.js";
import { caip2, chainIdOfCaip2, chainIdOfV1Name } from "../../protocol/networks.js";
import { field } from "../../protocol/words.js";
import type { SendingDoor } from "../facilitator/sending-door.js";
import { onInterrupt } from "../io/interrupt.js";
import type { CliConfig } from "../settings/config.js";
import { lockForSettle, type SettlementLocks, TurnTimeout } from "./settlement-locks.js";

/** The EVM chain a request names in its version's form (eip155:N, or a v1 name), if it does. */
export function requestChain(body: unknown): { chainId: number; network: string } | undefined {
  const x402 = field(body, "paymentPayload") !== undefined;
  const payload = field(body, x402 ? "paymentPayload" : "payload");
  const network = field(field(body, x402 ? "paymentRequirements" : "requirements"), "network");
  if (typeof network !== "string") return undefined;
  const chainId =
    field(payload, "x402Version") === 1 ? chainIdOfV1Name(network) : chainIdOfCaip2(network);
  return chainId === undefined ? undefined : { chainId, network };
}

export type Turn =
  /** The settle's turn: its configuration reads the keys it locked (a pipe is read only once). */
  | { readonly kind: "turn"; readonly config: CliConfig; readonly locks?: SettlementLocks }
  | { readonly kind: "timeout"; readonly failure: Failure }
  | { readonly kind: "interrupted"; readonly signal: NodeJS.Signals };

/** Waits for this settle's turn with the journal and keys (file journal only); serve: UsageError. */
export async function takeSettleTurn(
  config: CliConfig,
  onWait: ((line: string) => void) | undefined,
  forReconcile = false,
): Promise<Turn> {
  if (config.storeUrl) return { kind: "turn", config };
  const keys = config.loadPrivateKeys();
  const once: CliConfig = { ...config, loadPrivateKeys: () => keys, loadPrivateKey: () => keys[0] };
  const addresses = keys.map((key) => privateKeyToAccount(key).address);
  const interrupt = onInterrupt();
  try {
    const taking = lockForSettle(config.journalPath, addresses, onWait, forReconcile).then(
      (locks) => ({ kind: "turn" as const, config: once, locks }),
      (error: unknown) => {
        if (error instanceof TurnTimeout) {
          return {
            kind: "timeout" as const,
            failure: failure("settlement_failed", error.message, { status: 503 }),
          };
        }
        throw error;
      },
    );
    const outcome = await Promise.race([taking, interrupt.signal]);
    // Interrupted: a turn that comes later is given back when the process exits.
    return typeof outcome === "string" ? { kind: "interrupted", signal: outcome } : outcome;
  } finally {
    interrupt.dispose();
  }
}

const POLL_MS = 250;

/** Our own journal's transactions on `chainId`, `signer:nonce`: the settle itself follows them. */
function oursOn(facilitator: Facilitator, chainId: number): Set<string> {
  const ours = new Set<string>();
  const network = caip2(chainId);
  for (const entry of facilitator.journal.unsettled()) {
    if (entry.network === network) ours.add(`${entry.signer.toLowerCase()}:${entry.txNonce}`);
  }
  return ours;
}

interface PoolRead {
  readonly address: `0x${string}`;
  readonly mined: number;
  readonly sent: number;
  /** Transactions of the key in the pool that the journal did not record. */
  readonly unknown: number;
}

/** One read of every key's mined and pending counts, in one round trip; undefined if unreadable. */
async function readPool(
  client: PublicClient,
  addresses: readonly `0x${string}`[],
  ours: ReadonlySet<string>,
): Promise<PoolRead[] | undefined> {
  const counts = await Promise.all(
    addresses.map((address) =>
      Promise.all([
        client.getTransactionCount({ address, blockTag: "latest" }),
        client.getTransactionCount({ address, blockTag: "pending" }),
      ]),
    ),
  ).catch(() => undefined);
  return counts?.map(([mined, sent], i) => {
    const address = addresses[i] as `0x${string}`;
    let unknown = 0;
    for (let nonce = mined; nonce < sent; nonce++) {
      if (!ours.has(`${address.toLowerCase()}:${nonce}`)) unknown++;
    }
    return { address, mined, sent, unknown };
  });
}

/** Waits until no key has a pool transaction our journal did not record; still there: a failure. */
async function earlierTransactions(
  facilitator: Facilitator,
  chain: { chainId: number; network: string },
  timeoutMs: number,
): Promise<Failure | undefined> {
  const client = await facilitator.rpc.client(chain.chainId, chain.network).catch(() => undefined);
  if (!client) return undefined;
  const ours = oursOn(facilitator, chain.chainId);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pool = await readPool(client, facilitator.signers.addresses, ours);
    const waiting = pool?.find((key) => key.unknown > 0);
    if (!waiting) return undefined;
    if (Date.now() >= deadline) {
      const { address, unknown, mined, sent } = waiting;
      return failure(
        "settlement_failed",
        `the settlement key ${address} has ${unknown} transaction${unknown === 1 ? "" : "s"} waiting in the pool of ${caip2(chain.chainId)} (nonces ${mined} to ${sent - 1}) that this journal did not record, still unmined after ${Math.round(timeoutMs / 1000)} s (--confirm-timeout): one may already pay this payment, so nothing was sent; settle again once they are mined`,
        { status: 503 },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** earlierTransactions() beside `settle`: if the pool is busy, `gate` held it; settle afresh. */
export async function settleBesidePool<T>(
  facilitator: Facilitator,
  body: unknown,
  timeoutMs: number,
  gate: Pick<SendingDoor, "hold">,
  settle: () => Promise<T>,
  refused: (failure: Failure) => T,
): Promise<T> {
  const chain = requestChain(body);
  if (!chain || facilitator.signers.size === 0) return settle();
  const afterPool = async () => {
    const blocked = await earlierTransactions(facilitator, chain, timeoutMs);
    return blocked ? refused(blocked) : settle();
  };
  const ours = oursOn(facilitator, chain.chainId);
  // Our own unfinished transactions on the chain: the settle follows them, after the pool's read.
  if (ours.size > 0) return afterPool();
  const pool = facilitator.rpc
    .client(chain.chainId, chain.network)
    .then((client) => readPool(client, facilitator.signers.addresses, ours))
    .catch(() => undefined);
  const busy = pool.then((keys) => keys?.some((key) => key.unknown > 0) === true);
  gate.hold(
    busy.then((yes) => {
      if (yes) throw FacilitatorError.of("settlement_failed", "earlier transactions in the pool");
    }),
  );
  const answer = await settle();
  if (!(await busy)) return answer;
  gate.hold(Promise.resolve());
  return afterPool();
}
