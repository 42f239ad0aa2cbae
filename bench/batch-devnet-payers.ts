/**
 * bench:batch's payers on the devnet: a fresh account for every channel of every gas round, for
 * the voucher-rate channels and for the warm-up; each minted test USDC, those that deposit through
 * Permit2 given ether and their Permit2 approval (set-up, not measured); and the official
 * facilitator's relayer given ether.
 */
import { createTestClient, http, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { approvePermit2, type DevAccount, type Devnet } from "../src/evm/devnet/index.js";
import { batchedCall, mintCall, runSetupCalls } from "../src/evm/devnet/setup.js";
import type { Method } from "./batch-channel-payloads.js";
import { K, MINTS_PER_TX, NS, PAYER_MINT, PERMIT2, RATE_CHANNELS } from "./batch-settings.js";

export interface Payers {
  /** K payers per gas round, keyed "<facilitator> <method> <N>". */
  readonly roundPayers: Map<string, DevAccount[]>;
  /** One payer per voucher-rate channel. */
  readonly ratePayers: DevAccount[];
  readonly warmPayer: DevAccount;
}

export function freshPayer(): DevAccount {
  const privateKey = generatePrivateKey();
  const account = { address: privateKeyToAccount(privateKey).address, privateKey };
  // Test keys of this run only; still never printed.
  const redacted = () => ({ address: account.address, privateKey: "<redacted>" });
  Object.defineProperty(account, "toJSON", { value: redacted });
  Object.defineProperty(account, Symbol.for("nodejs.util.inspect.custom"), { value: redacted });
  return account;
}

/** One fresh payer per channel of every round, the rate channels, the warm-up. */
export function planPayers(methods: readonly Method[]): Payers {
  const roundPayers = new Map<string, DevAccount[]>();
  for (const method of methods) {
    for (const n of NS) {
      for (const name of ["ours", "official"]) {
        roundPayers.set(`${name} ${method} ${n}`, Array.from({ length: K }, freshPayer));
      }
    }
  }
  const ratePayers = Array.from({ length: RATE_CHANNELS }, freshPayer);
  const warmPayer = freshPayer();
  return { roundPayers, ratePayers, warmPayer };
}

/**
 * Mints every payer's test USDC (MINTS_PER_TX to a multicall transaction), gives the relayer
 * ether, and each Permit2 round's payer ether and its Permit2 approval.
 */
export async function fundPayers(devnet: Devnet, planned: Payers, relayer: DevAccount) {
  const { roundPayers, ratePayers, warmPayer } = planned;
  const everyone = [...[...roundPayers.values()].flat(), ...ratePayers, warmPayer];
  const mints = everyone.map((p) => mintCall(devnet.token.address, p.address, PAYER_MINT));
  const calls = [];
  for (let i = 0; i < mints.length; i += MINTS_PER_TX) {
    calls.push(batchedCall(mints.slice(i, i + MINTS_PER_TX)));
  }
  await runSetupCalls(devnet.rpcUrl, devnet.chainId, calls, devnet.anvil.mining);
  const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
  await anvil.setBalance({ address: relayer.address, value: parseEther("1000") });
  if (PERMIT2) {
    const permit2Payers = [...roundPayers.entries()]
      .filter(([key]) => key.includes("permit2"))
      .flatMap(([, payers]) => payers);
    for (const payer of permit2Payers) {
      await anvil.setBalance({ address: payer.address, value: parseEther("1") });
      await approvePermit2(devnet, payer, devnet.token.address);
    }
  }
}
