/** `facilitator pay`'s options; signing loads only when the command runs. */
import { Command, Option } from "commander";
import { runLoaded } from "../../io/errors.js";
import { afterHelp } from "../../io/help-layout.js";
import { collect, withChainOptions } from "../../settings/options.js";

const PAY_HELP = `
Against a devnet (found by its test USDC at the RPC's chain) the defaults pay 0.01 test USDC from
payer 1 to the devnet's payee, so this is a whole payment:
  source /tmp/facilitator-devnet-XXXX/devnet.env
  facilitator pay --amount 0.01 | facilitator settle -
  facilitator pay --method permit2 --payer 2 --x402 | facilitator verify -

Elsewhere, name what is paid and who pays:
  facilitator pay --network eip155:84532 \\
    --asset 0x036CbD53842c5426634e7929541eC2318f3dCF7e --to 0xYourAddress \\
    --amount 0.01 --payer-key-file payer.key > request.json

On Solana (a devnet started with \`facilitator devnet --svm\`, or any cluster by its RPC), the same:
  facilitator pay --network solana-devnet --payer 2 | facilitator verify -
  facilitator pay --rpc-url https://api.devnet.solana.com \\
    --network solana-devnet \\
    --asset 4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU \\
    --to YourWallet --amount 0.01 --fee-payer FacilitatorFeePayer \\
    --payer-key-file payer.json

The fee payer is the facilitator's (its GET /supported lists it under "solana:*"); with
--requirements it comes from extra.feePayer. --method and --approval are EVM only.

batch-settlement (EVM): the payer's channel to the seller is read from the chain; an empty one
gets a deposit (5 payments' worth by default) carrying the first voucher, a funded one a voucher:
  facilitator pay --scheme batch-settlement --x402 | facilitator settle -
  facilitator pay --scheme batch-settlement --x402 --cumulative 0.02 \\
    | facilitator verify -
Vouchers are cumulative; pass --cumulative when earlier vouchers are not claimed yet.
The seller's side builds on a voucher it was paid with (kept in a file); settle signs with the
receiver authorizer's key (devnet.env sets it):
  facilitator pay --scheme batch-settlement --cumulative 0.02 > voucher.json
  facilitator pay --claim voucher.json | facilitator settle -
  facilitator pay --sweep | facilitator settle -
  facilitator pay --refund voucher.json | facilitator settle -

Amounts here (--amount, --deposit, --cumulative) are in token units, with the token's decimals;
settle --amount (upto) is in atomic units.

The key is never accepted as a flag value and never printed. With --method permit2, a payer that
has not approved Permit2 signs the token's EIP-2612 permit too (the eip2612GasSponsoring extension).

Exit status: 0 signed, 2 usage or configuration, 3 the chain cannot be reached.`;

export const payCommand = withChainOptions(
  new Command("pay")
    .description(
      "sign a fresh payment as an x402 buyer would and print the request verify and settle read",
    )
    .option(
      "--requirements <file>",
      "PaymentRequirements (v1 or v2), or a 402 answer with accepts: [...] (- for stdin)",
    )
    .option(
      "--amount <token-units>",
      "in token units, such as 0.01 (the token's decimals apply: 0.01 USDC is 10000 atomic units; settle --amount takes atomic units)",
    )
    .option("--to <address>", "who is paid (payTo; on Solana the wallet, base58)")
    .option("--asset <address>", "the token contract (on Solana the mint)")
    .option(
      "--network <network>",
      "eip155:<chain id> or solana:<genesis hash prefix> (v2), or a v1 name such as base-sepolia or solana-devnet",
    )
    .addOption(
      new Option("--method <method>", "EVM: how the payer's signature moves the tokens").choices([
        "eip3009",
        "permit2",
      ]),
    )
    .addOption(
      new Option("--scheme <scheme>", "what kind of payment (default exact)").choices([
        "exact",
        "batch-settlement",
      ]),
    )
    .option(
      "--deposit <token-units>",
      "batch-settlement: deposit this much into the channel now (default: 5 payments' worth when the channel runs short)",
    )
    .option(
      "--cumulative <token-units>",
      "batch-settlement: the voucher's cumulative amount (default: what the channel paid out on chain plus this payment)",
    )
    .option(
      "--receiver-authorizer <address>",
      "batch-settlement: the seller's receiver authorizer (default: the requirements', or the devnet's)",
    )
    .option(
      "--claim <request>",
      "batch-settlement, as the seller: claim the voucher of this deposit or voucher request (a file, or - for stdin); repeat it for more channels, claimed in one transaction",
      collect,
    )
    .option(
      "--sweep",
      "batch-settlement, as the seller: the scheme's settle, paying what the receiver claimed out to it (--to and --asset; default the devnet's payee and USDC)",
    )
    .option(
      "--refund <request>",
      "batch-settlement, as the seller: give the payer back what its channel holds unclaimed, the voucher of this deposit or voucher request claimed first when it is not yet",
    )
    .option(
      "--approval",
      "EVM, with --method permit2: carry the payer's approval as a signed approve transaction (erc20ApprovalGasSponsoring) instead of an EIP-2612 permit",
    )
    .option(
      "--payer-key-file <file>",
      "the payer's key (the first key in the file; on Solana base58, or a solana-keygen JSON array)",
    )
    .option("--payer <n>", "on a devnet: pay from its payer n (EVM 1-5, Solana 1-3; default 1)")
    .option(
      "--fee-payer <address>",
      "Solana: the facilitator's fee payer (default: the requirements' extra.feePayer, or the devnet's)",
    )
    .option(
      "--valid-for <seconds>",
      "how long the authorization stays valid (default 300; on Solana maxTimeoutSeconds only: the transaction lives as long as its blockhash)",
    )
    .option("--x402", "print the x402 dialect ({x402Version, paymentPayload, paymentRequirements})")
    .option("--v1", "x402 version 1 (EIP-3009 or Solana; the network needs a v1 name)"),
  // pay signs as the buyer: the facilitator's fee payer is only named (--fee-payer), never loaded.
  "none",
)
  .option("-q, --quiet", "nothing on stderr; stdout still carries the JSON request")
  .addHelpText("after", afterHelp(PAY_HELP))
  .action(runLoaded(async () => (await import("./pay.js")).runPay));
