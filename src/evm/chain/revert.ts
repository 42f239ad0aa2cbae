/** Reading why a call reverted out of viem's error chain. */
import { BaseError, decodeErrorResult, type Hex, parseAbi } from "viem";

const errorStringAbi = parseAbi(["error Error(string reason)"]);

function isHex(value: unknown): value is Hex {
  return typeof value === "string" && /^0x[0-9a-fA-F]*$/.test(value);
}

/** The revert reason string, when the node reported one. */
export function revertReason(error: unknown): string | undefined {
  if (!(error instanceof BaseError)) return undefined;
  let reason: string | undefined;
  error.walk((e) => {
    if (reason !== undefined) return true;
    const candidate = e as { reason?: unknown; data?: unknown };
    if (typeof candidate.reason === "string" && candidate.reason) {
      reason = candidate.reason;
      return true;
    }
    if (isHex(candidate.data) && candidate.data.startsWith("0x08c379a0")) {
      try {
        const decoded = decodeErrorResult({ abi: errorStringAbi, data: candidate.data });
        reason = String(decoded.args[0]);
        return true;
      } catch {
        // Not an Error(string) payload after all: keep looking.
      }
    }
    return false;
  });
  if (reason !== undefined) return reason;
  const text = [error.details, error.shortMessage, error.message].join("\n");
  const match = /execution reverted:?\s*([^\n]*)/i.exec(text);
  const tail = match?.[1]?.trim();
  return tail
    ? tail.replace(/^reverted with reason string\s*/i, "").replace(/^'|'$/g, "")
    : undefined;
}

/** The raw revert data the node returned, for decoding custom errors. */
export function revertData(error: unknown): Hex | undefined {
  if (!(error instanceof BaseError)) return undefined;
  let found: Hex | undefined;
  error.walk((e) => {
    const data = (e as { data?: unknown }).data;
    if (isHex(data) && data.length >= 10) {
      found = data;
      return true;
    }
    return false;
  });
  return found;
}

/** True when the node executed the call and it reverted (as opposed to failing to run it). */
export function isRevert(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false;
  const found = error.walk((e) => {
    const name = (e as { name?: string }).name ?? "";
    return (
      name === "ExecutionRevertedError" ||
      name === "ContractFunctionRevertedError" ||
      name === "RawContractError" ||
      /execution reverted|reverted with/i.test((e as Error).message ?? "")
    );
  });
  return Boolean(found);
}
