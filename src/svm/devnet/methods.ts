/** The Solana JSON-RPC methods the devnet answers, in the shapes Solana nodes give. */
import { type Address, getBase58Decoder, getCompiledTransactionMessageDecoder } from "@solana/kit";
import { ADDRESS_LOOKUP_TABLE_PROGRAM } from "../exact/constants.js";
import { messageVersionOf } from "../exact/decode.js";
import { decodeLookupTable } from "../exact/lookup-tables.js";
import type { Commitment } from "../exact/rpc.js";
import { Rejected, type SvmCluster } from "./cluster.js";
import { type CompiledMessage, transactionFee } from "./fees.js";
import {
  address,
  bytesOf,
  type Config,
  commitmentOf,
  config,
  count,
  decodeTransaction,
  describe,
} from "./params.js";
import { invalidParams, RpcError, type RpcHandler } from "./rpc-server.js";
import { decodeMint, parseTokenAccountData, tokenAccountKind } from "./token-layout.js";
import { rpcStatus } from "./tx-error.js";

/** A lookup table as a node's jsonParsed answers it (what @solana/kit's fetch reads). */
function parseLookupTableData(owner: string, data: Uint8Array) {
  if (owner !== ADDRESS_LOOKUP_TABLE_PROGRAM) return undefined;
  const table = decodeLookupTable(data);
  if (!table) return undefined;
  const info = {
    addresses: table.addresses,
    authority: table.authority ?? undefined,
    deactivationSlot: table.deactivationSlot.toString(),
    lastExtendedSlot: table.lastExtendedSlot.toString(),
    lastExtendedSlotStartIndex: table.lastExtendedSlotStartIndex,
  };
  return {
    program: "address-lookup-table",
    parsed: { info, type: "lookupTable" },
    space: data.length,
  };
}

/** Solana devnet's genesis hash: the official tooling maps it to solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1. */
export const DEVNET_GENESIS_HASH = "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG";
const RENT_EPOCH_EXEMPT = 18446744073709551615n;
const API_VERSION = "2.2.0";
const base58 = getBase58Decoder();

export function svmRpcMethods(cluster: SvmCluster): Record<string, RpcHandler> {
  const svm = cluster.svm;
  const context = (commitment: Commitment = "finalized") => ({
    apiVersion: API_VERSION,
    slot: cluster.clock.slotAt(commitment),
  });
  const slot = (params: unknown[]) => cluster.clock.slotAt(commitmentOf(config(params, 0)));
  /** A method answering `{ context, value }` at the commitment of its config, `params[at]`. */
  const withContext =
    (
      at: number,
      value: (params: unknown[], cfg: Config, commitment: Commitment) => unknown,
    ): RpcHandler =>
    (params) => {
      const cfg = config(params, at);
      const commitment = commitmentOf(cfg);
      return { context: context(commitment), value: value(params, cfg, commitment) };
    };

  function mintDecimals(mint: Address): number | undefined {
    const account = svm.getAccount(mint);
    if (!account.exists || tokenAccountKind(account.programAddress, account.data) !== "mint")
      return undefined;
    return decodeMint(account.data).decimals;
  }

  function accountJson(addr: Address, cfg: Config) {
    const account = svm.getAccount(addr);
    if (!account.exists) return null;
    const encoding = cfg.encoding ?? "base58";
    let data: unknown;
    const parsed =
      encoding === "jsonParsed"
        ? (parseTokenAccountData(account.programAddress, account.data, mintDecimals) ??
          parseLookupTableData(account.programAddress, account.data))
        : undefined;
    if (parsed) data = parsed;
    else {
      let bytes = account.data;
      const slice = cfg.dataSlice as { offset?: unknown; length?: unknown } | undefined;
      if (slice) {
        const offset = Number(count(slice.offset, "dataSlice.offset"));
        bytes = bytes.subarray(offset, offset + Number(count(slice.length, "dataSlice.length")));
      }
      if (encoding === "base58") data = [base58.decode(bytes), "base58"];
      else if (encoding === "base64" || encoding === "jsonParsed")
        data = [Buffer.from(bytes).toString("base64"), "base64"];
      else throw invalidParams(`Invalid params: unsupported encoding ${String(encoding)}`);
    }
    return {
      data,
      executable: account.executable,
      lamports: account.lamports,
      owner: account.programAddress,
      rentEpoch: RENT_EPOCH_EXEMPT,
      space: account.data.length,
    };
  }

  function simulation(run: ReturnType<SvmCluster["simulate"]>, cfg: Config) {
    const value: Record<string, unknown> = {
      err: run.err,
      logs: run.logs,
      accounts: null,
      unitsConsumed: run.unitsConsumed,
      returnData: null,
    };
    if (cfg.innerInstructions === true)
      value.innerInstructions = run.err === null ? run.innerInstructions : null;
    return value;
  }

  return {
    getHealth: () => "ok",
    getVersion: () => ({ "solana-core": API_VERSION, "feature-set": 0 }),
    getGenesisHash: () => DEVNET_GENESIS_HASH,
    getSlot: slot,
    // No slot is skipped here: a block's height is its slot.
    getBlockHeight: slot,
    getEpochInfo: (params) => {
      const at = slot(params);
      return { absoluteSlot: at, blockHeight: at, epoch: 0, slotIndex: at, slotsInEpoch: 432000 };
    },
    getLatestBlockhash: withContext(0, (_params, _cfg, commitment) =>
      cluster.clock.latestBlockhash(commitment),
    ),
    isBlockhashValid: withContext(1, (params) => {
      if (typeof params[0] !== "string") throw invalidParams("Invalid params: blockhash");
      return cluster.clock.isBlockhashValid(params[0]);
    }),
    getMinimumBalanceForRentExemption: (params) =>
      svm.minimumBalanceForRentExemption(count(params[0], "data length")),
    getBalance: withContext(1, (params) => svm.getBalance(address(params, 0)) ?? 0n),
    getAccountInfo: withContext(1, (params, cfg) => accountJson(address(params, 0), cfg)),
    getMultipleAccounts: withContext(1, ([list], cfg) => {
      if (!Array.isArray(list) || list.length > 100)
        throw invalidParams("Invalid params: expected at most 100 addresses");
      return list.map((_, i) => accountJson(address(list, i), cfg));
    }),
    getTokenAccountBalance: withContext(1, (params) => {
      const account = accountJson(address(params, 0), { encoding: "jsonParsed" });
      const parsed = (
        account?.data as { parsed?: { type: string; info: { tokenAmount: unknown } } }
      )?.parsed;
      if (parsed?.type !== "account") throw invalidParams("Invalid param: not a Token account");
      return parsed.info.tokenAmount;
    }),
    getFeeForMessage: withContext(1, (params) => {
      const bytes = bytesOf(params[0], "base64", "message");
      let message: CompiledMessage;
      try {
        message = getCompiledTransactionMessageDecoder().decode(bytes);
      } catch {
        throw invalidParams("Invalid params: invalid message");
      }
      return cluster.clock.isBlockhashValid(message.lifetimeToken) ? transactionFee(message) : null;
    }),
    simulateTransaction: withContext(1, (params, cfg) => {
      const sigVerify = cfg.sigVerify === true;
      const replace = cfg.replaceRecentBlockhash === true;
      if (sigVerify && replace)
        throw invalidParams(
          "Invalid params: sigVerify may not be used with replaceRecentBlockhash",
        );
      const tx = decodeTransaction(params, cfg);
      const value = simulation(cluster.simulate(tx, { sigVerify, checkBlockhash: !replace }), cfg);
      if (replace) value.replacementBlockhash = cluster.clock.latestBlockhash("processed");
      return value;
    }),
    sendTransaction: (params) => {
      const cfg = config(params, 1);
      const tx = decodeTransaction(params, cfg);
      const sigFailure = () => new RpcError(-32003, "Transaction signature verification failure");
      if (cfg.skipPreflight !== true) {
        const run = cluster.simulate(tx, { sigVerify: true, checkBlockhash: true });
        if (run.err === "SignatureFailure") throw sigFailure();
        if (run.err !== null) {
          const message = `Transaction simulation failed: ${describe(run.err)}`;
          throw new RpcError(-32002, message, simulation(run, {}));
        }
      }
      try {
        return cluster.send(tx).signature;
      } catch (error) {
        if (!(error instanceof Rejected)) throw error;
        // A node takes the transaction and drops it (a duplicate keeps its first status).
        if (error.err !== "SignatureFailure" && tx.signature !== null) return tx.signature;
        throw sigFailure();
      }
    },
    getSignatureStatuses: (params) => {
      const list = params[0];
      if (!Array.isArray(list) || list.length > 256)
        throw invalidParams("Invalid params: expected at most 256 signatures");
      const value = list.map((signature) => {
        const landed = typeof signature === "string" ? cluster.landed(signature) : undefined;
        if (!landed) return null;
        return {
          slot: landed.slot,
          ...cluster.clock.statusOf(landed.slot),
          err: landed.err,
          status: rpcStatus(landed.err),
        };
      });
      return { context: context("processed"), value };
    },
    getTransaction: (params) => {
      const cfg = config(params, 1);
      const commitment = commitmentOf(cfg);
      if (commitment === "processed")
        throw invalidParams("Invalid params: processed commitment is not supported");
      if (cfg.encoding !== "base64")
        throw invalidParams("Invalid params: this devnet answers getTransaction in base64 only");
      const landed = typeof params[0] === "string" ? cluster.landed(params[0]) : undefined;
      if (!landed || landed.wire === "" || cluster.clock.slotAt(commitment) < landed.slot)
        return null;
      return {
        slot: landed.slot,
        blockTime: landed.blockTime,
        version: messageVersionOf(Buffer.from(landed.wire, "base64")),
        transaction: [landed.wire, "base64"],
        meta: {
          err: landed.err,
          status: rpcStatus(landed.err),
          fee: landed.fee,
          logMessages: landed.logs,
          computeUnitsConsumed: landed.unitsConsumed,
          innerInstructions: landed.innerInstructions,
          loadedAddresses: { readonly: [], writable: [] },
          preBalances: [],
          postBalances: [],
          preTokenBalances: [],
          postTokenBalances: [],
          rewards: [],
        },
      };
    },
    requestAirdrop: (params) => {
      const lamports = count(params[1], "lamports");
      try {
        return cluster.airdrop(address(params, 0), lamports);
      } catch (error) {
        if (error instanceof Rejected)
          throw new RpcError(-32603, `airdrop failed: ${error.message}`);
        throw error;
      }
    },
  };
}
