/**
 * serve's stop, within --shutdown-timeout: new requests 503, those in flight may finish; near the
 * end new broadcasts are refused and the rest answered (settles: settlement_pending).
 */
import type { Reconciler } from "../../../core/reconciler.js";
import type { Facilitator } from "../../../facilitator.js";
import type { RunningServer } from "../../../http/server.js";
import type { SendingDoor } from "../../facilitator/sending-door.js";

/** Between the door shutting and the late answers: time for the refused settles to answer. */
const DOOR_GRACE_MS = 300;
/** Kept back from the timeout for the store's last writes and the process's end. */
const RESERVE_MS = 1_500;

export interface Stopping {
  readonly server: RunningServer;
  readonly door: SendingDoor;
  readonly reconciler: Reconciler | undefined;
  readonly facilitator: Facilitator;
  readonly shutdownTimeoutMs: number;
}

/** Resolves with `work`, or after `ms` without it (it goes on, unwaited). */
function within(work: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms));
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export async function stopServing(s: Stopping): Promise<void> {
  const started = Date.now();
  const left = () => s.shutdownTimeoutMs - (Date.now() - started);
  const reserve = Math.min(RESERVE_MS, s.shutdownTimeoutMs / 4);
  const grace = Math.min(DOOR_GRACE_MS, s.shutdownTimeoutMs / 10);
  const answerAt = s.shutdownTimeoutMs - reserve;
  const timers = [
    setTimeout(() => s.door.shut(), answerAt - grace),
    setTimeout(() => s.server.answerNow(), answerAt),
  ];
  try {
    await s.server.close();
  } finally {
    for (const timer of timers) clearTimeout(timer);
  }
  // Whatever ran past its answer (a settle following its transaction) sends nothing new now.
  s.door.shut();
  await within(s.reconciler?.stop() ?? Promise.resolve(), left() / 2);
  // Every answer given is written down as given before the store closes.
  await within(s.facilitator.answers.flush(), left() / 2);
  // Gives up this replica's claims and signer leases at once, rather than when they run out.
  await within(Promise.resolve(s.facilitator.journal.close()), left());
}
