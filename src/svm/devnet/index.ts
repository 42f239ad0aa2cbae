/** A local Solana cluster: litesvm behind a JSON-RPC server answering as Solana devnet. */
import { SvmCluster } from "./cluster.js";
import { DEVNET_GENESIS_HASH, svmRpcMethods } from "./methods.js";
import { startRpcServer } from "./rpc-server.js";
import {
  DEFAULT_PAYER_COUNT,
  DEVNET_TOKEN_2022_MINT,
  DEVNET_USDC_MINT,
  devnetKeys,
  setUpDevnet,
  TOKEN_2022_DECIMALS,
  USDC_DECIMALS,
} from "./setup.js";

export type { SvmDevKey } from "./keys.js";
export { secretKeyBytes, svmDevKey } from "./keys.js";
export { DEVNET_GENESIS_HASH } from "./methods.js";
export {
  associatedTokenAddress,
  DEVNET_TOKEN_2022_MINT,
  DEVNET_USDC_MINT,
  PAYER_USDC_BALANCE,
  USDC_DECIMALS,
} from "./setup.js";

/** The CAIP-2 id of Solana devnet, which this cluster answers as. */
export const SOLANA_DEVNET_NETWORK = `solana:${DEVNET_GENESIS_HASH.slice(0, 32)}` as const;

export interface SvmDevnetOptions {
  /** Port for the RPC server (default: any free port). */
  port?: number;
  host?: string;
  /** Milliseconds per slot (default 400, Solana's target). */
  slotMs?: number;
  /** Number of funded payers (default 3); used on a fresh cluster only. */
  payers?: number;
  /** Keep the cluster's state here between runs: restored at start, saved on stop. */
  dir?: string;
}

export type SvmDevnet = Awaited<ReturnType<typeof startSvmDevnet>>;

export async function startSvmDevnet(options: SvmDevnetOptions = {}) {
  const cluster = SvmCluster.open(options.dir);
  const keys = devnetKeys(options.payers ?? DEFAULT_PAYER_COUNT);
  if (!cluster.restored) await setUpDevnet(cluster.svm, keys);
  const server = await startRpcServer(svmRpcMethods(cluster), options);
  cluster.startSlots(options.slotMs ?? 400);
  let stopped: Promise<void> | undefined;
  return {
    rpcUrl: server.url,
    genesisHash: DEVNET_GENESIS_HASH,
    network: SOLANA_DEVNET_NETWORK,
    feePayer: keys.feePayer,
    payers: keys.payers,
    payee: keys.payee,
    mint: { address: DEVNET_USDC_MINT, decimals: USDC_DECIMALS },
    /** The Token-2022 test token (a fresh cluster's; one restored from an older run may lack it). */
    token2022: { address: DEVNET_TOKEN_2022_MINT, decimals: TOKEN_2022_DECIMALS },
    /** The cluster itself (for tests: produce a slot now, read the runtime). */
    cluster,
    stop(): Promise<void> {
      stopped ??= (async () => {
        cluster.stopSlots();
        await server.close();
        if (options.dir) cluster.save(options.dir);
      })();
      return stopped;
    },
  };
}
