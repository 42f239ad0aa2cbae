/** What a command says while it waits out, or gives up on, a PostgreSQL store's signer lease. */
import type { SignerLease, SignersLeased, SignerWait } from "../../store/postgres-leases.js";
import { UsageError } from "../io/errors.js";

/** "2026-01-01T12:00:03Z": to the second, in UTC. */
const when = (date: Date) => `${date.toISOString().slice(0, 19)}Z`;

const seconds = (ms: number) => Math.max(1, Math.round(ms / 1000));

function leased(leases: readonly SignerLease[], untilToo: boolean): string {
  // Empty only if the lease ended between the two reads.
  if (leases.length === 0) return "a signer of this process is leased by another";
  return leases
    .map(
      (l) =>
        `signer ${l.address} is leased by ${l.owner}${untilToo ? ` until ${when(l.until)}` : ""}`,
    )
    .join(", ");
}

/** The line said as the wait starts. */
export function describeSignerWait(wait: SignerWait, store: string): string {
  return `${leased(wait.leases, true)} on the store ${store}; waiting up to ${seconds(wait.waitMs)} s for the lease to end (it does if that replica stopped; a running one renews it)`;
}

/** The same, as a JSON log line's fields (serve's log when stderr is no terminal). */
export function signerWaitEntry(wait: SignerWait, store: string): Record<string, unknown> {
  return {
    event: "waiting_for_signer",
    message: describeSignerWait(wait, store),
    signers: wait.leases.map((l) => ({
      address: l.address,
      holder: l.owner,
      until: when(l.until),
    })),
    waitSeconds: seconds(wait.waitMs),
  };
}

/** The refusal once the wait ran out: `key_in_use`, with the advice for a server or a command. */
export function signersLeasedError(
  error: SignersLeased,
  store: string,
  server: boolean,
): UsageError {
  const advice = server
    ? "give each replica its own key (two processes sending with one key can pay a payment twice)"
    : "send this payment to POST /settle of the serve that holds it instead (two processes sending with one key can pay a payment twice), or stop that process first";
  return new UsageError(
    `${leased(error.leases, false)} on the store ${store}, still after ${seconds(error.waitedMs)} s of waiting: that process runs and renews its lease; ${advice}`,
    "key_in_use",
  );
}
