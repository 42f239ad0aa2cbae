/** Options several commands share: where the chains are, the config file, the settlement key. */
import type { Command } from "commander";

export const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * What of the Solana fee payer a command uses: its key and fee cap (verify names it, settle signs
 * with it), its key only (status: it names a Solana payment's settlement), or nothing (pay).
 */
export type FeePayerUse = "key and fee cap" | "key only" | "none";

/**
 * --rpc-url, --public-rpcs, --config: how every command finds its chains; and the Solana fee
 * payer's --svm-private-key-file and --svm-max-fee-lamports, as far as the command uses them.
 */
export function withChainOptions(
  command: Command,
  feePayer: FeePayerUse = "key and fee cap",
): Command {
  command
    .option(
      "--rpc-url <url>",
      "RPC endpoint, repeatable or comma-separated (env FACILITATOR_RPC_URL); only their chains are served",
      collect,
    )
    .option(
      "--public-rpcs",
      "also serve well-known chains that have no --rpc-url through built-in public RPCs " +
        "(env FACILITATOR_PUBLIC_RPCS=1; the default when no RPC is configured)",
    );
  if (feePayer !== "none") {
    command.option(
      "--svm-private-key-file <file>",
      "Solana fee payer key file, base58 secret keys one per line (or env FACILITATOR_SVM_PRIVATE_KEY)",
    );
  }
  if (feePayer === "key and fee cap") {
    command.option(
      "--svm-max-fee-lamports <n>",
      "most lamports one Solana settlement may cost the fee payer (default 150000; env FACILITATOR_SVM_MAX_FEE_LAMPORTS)",
    );
  }
  return command.option("--config <file>", "JSON config file (env FACILITATOR_CONFIG)");
}

export const DENY_LIST_HELP =
  "refuse payments whose payer or payee is in this file, one EVM or Solana address a line; serve re-reads it when it changes (env FACILITATOR_DENY_LIST)";

export const ERC6492_HELP =
  "let undeployed (ERC-6492) wallets of this factory pay, deploying them as they settle; " +
  "repeatable (env FACILITATOR_ERC6492_FACTORIES)";

/** --journal, --store: where settlements are written down (status reads them too). */
export function withStoreOptions(command: Command): Command {
  return command
    .option(
      "--journal <file>",
      "settlement journal (env FACILITATOR_JOURNAL; default ~/.local/state/facilitator/journal.jsonl)",
    )
    .option(
      "--store <url>",
      "keep settlements in PostgreSQL, shared by several serve replicas, instead of the journal (env FACILITATOR_STORE; put the password in PGPASSWORD or the config file)",
    );
}

/** The options of every command that settles: keys, receipt wait, journal, fee cap. */
export function withSettlementOptions(command: Command): Command {
  return withStoreOptions(
    command
      .option(
        "--private-key-file <file>",
        "settlement key file, one key per line for a pool (or env FACILITATOR_PRIVATE_KEY / FACILITATOR_PRIVATE_KEY_FILE)",
      )
      .option(
        "--receiver-authorizer-key-file <file>",
        "batch-settlement: the receiver authorizer's key file, one key that signs claims and refunds for sellers who leave them to us; never a settlement key (or env FACILITATOR_RECEIVER_AUTHORIZER_KEY / FACILITATOR_RECEIVER_AUTHORIZER_KEY_FILE)",
      )
      .option(
        "--claim-batch-rows <n>",
        "batch-settlement: most channels one claim transaction applies (default 100, at most 500)",
      )
      .option(
        "--confirm-timeout <seconds>",
        "how long to wait for the receipt before answering settlement_pending (default 60)",
      ),
  )
    .option(
      "--max-fee <amount>",
      "most one settlement may cost in the native token, for every network (0.002) or per network (eip155:8453=0.002,eip155:1=0.02); default: per network, see doctor (env FACILITATOR_MAX_FEE)",
    )
    .option(
      "--replace-after <seconds>",
      "replace a transaction stuck in the mempool this long with a higher fee (default 15)",
    )
    .option(
      "--confirmations <n>",
      "blocks a receipt must be deep before confirmed answers, for chains with deep reorgs (default 1; env FACILITATOR_CONFIRMATIONS)",
    );
}

/** serve's (and doctor's, which reads what serve would): a one-shot settle has no claims to wait for. */
export function withClaimBatchWait(command: Command): Command {
  return command.option(
    "--claim-batch-wait <seconds>",
    "batch-settlement: how long a claim waits for others to share its transaction (default 0.5; 0: none)",
  );
}
