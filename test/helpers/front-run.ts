/**
 * A front-runner between us and the chain (a hostile RPC, a private mempool, a sequencer): before
 * our settlement of a payer it holds the key of reaches the node, that payer's
 * cancelAuthorization is mined, so ours reverts. Simulation cannot see it coming.
 */
import {
  createTestClient,
  createWalletClient,
  decodeFunctionData,
  type Hex,
  http,
  parseEther,
  parseSignature,
  parseTransaction,
  type TransactionSerialized,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { testUsdcAbi } from "../../src/evm/devnet/artifacts.js";
import type { Devnet } from "../../src/evm/devnet/index.js";
import { chainOf } from "./chain.js";
import type { RpcProxy } from "./rpc-proxy.js";
import { signCancelAuthorization } from "./sign.js";

/**
 * Makes `proxy` front-run every EIP-3009 settlement from a payer in `keys` (lowercase address to
 * private key); the others pass. `proxy.intercept = () => undefined` stops it.
 */
export function frontRun(devnet: Devnet, proxy: RpcProxy, keys: ReadonlyMap<string, Hex>): void {
  const test = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
  proxy.intercept = (method, params) => {
    if (method !== "eth_sendRawTransaction" && method !== "eth_sendRawTransactionSync") return;
    const raw = (params as Hex[])[0] as TransactionSerialized;
    const tx = parseTransaction(raw);
    if (!tx.data) return undefined;
    const call = decodeFunctionData({ abi: testUsdcAbi, data: tx.data });
    if (call.functionName !== "transferWithAuthorization") return undefined;
    const [from, , , , , nonce] = call.args;
    const key = keys.get(from.toLowerCase());
    if (!key) return undefined;
    return {
      before: async () => {
        const account = privateKeyToAccount(key);
        await test.setBalance({ address: account.address, value: parseEther("1") });
        const { v, r, s } = parseSignature(await signCancelAuthorization(devnet, key, nonce));
        const wallet = createWalletClient({ account, transport: http(devnet.rpcUrl) });
        const hash = await wallet.writeContract({
          address: devnet.token.address,
          abi: testUsdcAbi,
          functionName: "cancelAuthorization",
          args: [account.address, nonce, Number(v), r, s],
          chain: null,
        });
        await chainOf(devnet).waitForTransactionReceipt({ hash, pollingInterval: 20 });
      },
    };
  };
}
