/** litesvm's transaction errors in the JSON shape Solana RPC nodes give them (serde's). */

const TRANSACTION_ERRORS = (
  "AccountInUse AccountLoadedTwice AccountNotFound ProgramAccountNotFound InsufficientFundsForFee " +
  "InvalidAccountForFee AlreadyProcessed BlockhashNotFound CallChainTooDeep MissingSignatureForFee " +
  "InvalidAccountIndex SignatureFailure InvalidProgramForExecution SanitizeFailure " +
  "ClusterMaintenance AccountBorrowOutstanding WouldExceedMaxBlockCostLimit UnsupportedVersion " +
  "InvalidWritableAccount WouldExceedMaxAccountCostLimit WouldExceedAccountDataBlockLimit " +
  "TooManyAccountLocks AddressLookupTableNotFound InvalidAddressLookupTableOwner " +
  "InvalidAddressLookupTableData InvalidAddressLookupTableIndex InvalidRentPayingAccount " +
  "WouldExceedMaxVoteCostLimit WouldExceedAccountDataTotalLimit MaxLoadedAccountsDataSizeExceeded " +
  "ResanitizationNeeded InvalidLoadedAccountsDataSizeLimit UnbalancedTransaction " +
  "ProgramCacheHitMaxLimit CommitCancelled"
).split(" ");

const INSTRUCTION_ERRORS = (
  "GenericError InvalidArgument InvalidInstructionData InvalidAccountData AccountDataTooSmall " +
  "InsufficientFunds IncorrectProgramId MissingRequiredSignature AccountAlreadyInitialized " +
  "UninitializedAccount UnbalancedInstruction ModifiedProgramId ExternalAccountLamportSpend " +
  "ExternalAccountDataModified ReadonlyLamportChange ReadonlyDataModified DuplicateAccountIndex " +
  "ExecutableModified RentEpochModified NotEnoughAccountKeys AccountDataSizeChanged " +
  "AccountNotExecutable AccountBorrowFailed AccountBorrowOutstanding DuplicateAccountOutOfSync " +
  "InvalidError ExecutableDataModified ExecutableLamportChange ExecutableAccountNotRentExempt " +
  "UnsupportedProgramId CallDepth MissingAccount ReentrancyNotAllowed MaxSeedLengthExceeded " +
  "InvalidSeeds InvalidRealloc ComputationalBudgetExceeded PrivilegeEscalation " +
  "ProgramEnvironmentSetupFailure ProgramFailedToComplete ProgramFailedToCompile Immutable " +
  "IncorrectAuthority AccountNotRentExempt InvalidAccountOwner ArithmeticOverflow " +
  "UnsupportedSysvar IllegalOwner MaxAccountsDataAllocationsExceeded MaxAccountsExceeded " +
  "MaxInstructionTraceLengthExceeded BuiltinProgramsMustConsumeComputeUnits BorshIoError"
).split(" ");

export type RpcTransactionError = string | Record<string, unknown>;

function instructionError(err: unknown): unknown {
  if (typeof err === "number") return INSTRUCTION_ERRORS[err] ?? "GenericError";
  if (err && typeof err === "object" && "code" in err) return { Custom: Number(err.code) };
  if (err && typeof err === "object" && "msg" in err) return { BorshIoError: String(err.msg) };
  return "GenericError";
}

/** The RPC JSON form of a litesvm `FailedTransactionMetadata.err()` value. */
export function rpcTransactionError(err: unknown): RpcTransactionError {
  if (typeof err === "number") return TRANSACTION_ERRORS[err] ?? "SanitizeFailure";
  if (err && typeof err === "object") {
    const name = err.constructor?.name ?? "";
    if ("err" in err && typeof err.err === "function" && "index" in err)
      return { InstructionError: [Number(err.index), instructionError(err.err())] };
    if (name.includes("DuplicateInstruction") && "index" in err)
      return { DuplicateInstruction: Number(err.index) };
    if ("accountIndex" in err) {
      const key = name.includes("InsufficientFundsForRent")
        ? "InsufficientFundsForRent"
        : "ProgramExecutionTemporarilyRestricted";
      return { [key]: { account_index: Number(err.accountIndex) } };
    }
  }
  return "SanitizeFailure";
}

/** Solana's `{ Ok: null }` / `{ Err: … }` status beside `err`. */
export function rpcStatus(err: RpcTransactionError | null) {
  return err === null ? { Ok: null } : { Err: err };
}
