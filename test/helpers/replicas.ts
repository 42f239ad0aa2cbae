/** Several `facilitator serve` replicas on one PostgreSQL store and one devnet, each with its own key. */
import type { Hex } from "viem";
import { devAccounts } from "../../src/evm/devnet/accounts.js";
import { type DevAccount, type Devnet, startDevnet } from "../../src/evm/devnet/index.js";
import { chainOf } from "./chain.js";
import { type Postgres, startPostgres } from "./postgres.js";
import { type Serving, startServe } from "./serve.js";

export interface Replica extends Serving {
  readonly signer: DevAccount;
}

/** Dev accounts 0 (the devnet's facilitator), 6 and 7 hold ether and sign nothing else there. */
export const replicaSigners: readonly DevAccount[] = [0, 6, 7].map((i) => {
  const account = devAccounts[i];
  if (!account) throw new Error(`no dev account ${i}`);
  return account;
});

/** Starts one replica: its own key, the devnet's RPC, the shared store; claims lease `leaseSeconds`. */
export function startReplica(
  devnet: Devnet,
  store: string,
  signer: DevAccount,
  leaseSeconds = 5,
  env: Record<string, string> = {},
): Promise<Replica> {
  return startServe([], {
    FACILITATOR_RPC_URL: devnet.rpcUrl,
    FACILITATOR_PRIVATE_KEY: signer.privateKey,
    FACILITATOR_STORE: store,
    FACILITATOR_STORE_LEASE_SECONDS: String(leaseSeconds),
    // Hundreds of settlements to the devnet's one payee: what these tests load, not a rate.
    FACILITATOR_RATE_PER_PAYER: "0",
    ...env,
  }).then((serving) => ({ ...serving, signer }));
}

export async function stopReplicas(replicas: readonly Replica[]): Promise<void> {
  await Promise.all(
    replicas.map(async (replica) => {
      if (replica.child.exitCode !== null || replica.child.signalCode !== null) return;
      replica.child.kill("SIGTERM");
      const timer = setTimeout(() => replica.child.kill("SIGKILL"), 10_000);
      await replica.exited;
      clearTimeout(timer);
    }),
  );
}

/** How many transactions these accounts have had mined, all told. */
export async function sentBy(devnet: Devnet, accounts: readonly DevAccount[]): Promise<number> {
  const client = chainOf(devnet);
  const counts = await Promise.all(
    accounts.map((a) => client.getTransactionCount({ address: a.address, blockTag: "latest" })),
  );
  return counts.reduce((sum, n) => sum + n, 0);
}

export interface SettleReply {
  readonly status: number;
  readonly body: { success?: boolean; error?: string; transaction?: Hex; transactionHash?: Hex };
}

/** POSTs `body` to `path` of a replica; a broken connection is status 0. */
export async function postTo(url: string, path: string, body: unknown): Promise<SettleReply> {
  try {
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    return { status: response.status, body: (await response.json()) as SettleReply["body"] };
  } catch (error) {
    return { status: 0, body: { error: (error as Error).message } };
  }
}

/** Counts of answers by "status error" ("200" for a success). */
export function tally(replies: readonly SettleReply[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status, body } of replies) {
    const key = status === 200 ? "200" : `${status} ${body.error ?? "?"}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

export interface Cluster {
  readonly devnet: Devnet;
  readonly postgres: Postgres;
  /** The URL of the database the replicas share. */
  readonly store: string;
  /** Started one after the other: the first creates the schema, the others find it. */
  readonly replicas: Replica[];
  stop(): Promise<void>;
}

/** A devnet, a PostgreSQL server and `count` replicas on it (keys: replicaSigners in order). */
export async function startCluster(options: {
  readonly count: number;
  readonly leaseSeconds?: number;
  readonly mining?: "auto" | "manual";
  /** More environment for every replica. */
  readonly env?: Record<string, string>;
}): Promise<Cluster> {
  const [devnet, postgres] = await Promise.all([
    startDevnet({ mining: options.mining ?? "auto" }),
    startPostgres(),
  ]);
  const store = await postgres.freshDatabase("replicas");
  const replicas: Replica[] = [];
  const stop = async () => {
    await stopReplicas(replicas);
    await postgres.stop();
    await devnet.stop();
  };
  try {
    for (const signer of replicaSigners.slice(0, options.count)) {
      replicas.push(await startReplica(devnet, store, signer, options.leaseSeconds, options.env));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { devnet, postgres, store, replicas, stop };
}
