/**
 * What bench/overload.ts is made of: a feed of freshly signed payments, open- and closed-loop
 * settles over node:http (load.ts's postOnce), each answer sorted into what a seller sees, and
 * the 10-second windows of the curve.
 */
import http from "node:http";
import type { Address, Hex } from "viem";
import type { DevAccount, Devnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { percentile } from "./lib.js";
import { type Posted, postOnce } from "./load.js";

/** How an answer counts: settled, refused for load, broadcast but not confirmed, else. */
export type Kind = "ok" | "overloaded" | "pending" | "other" | "refused" | "cut";

export interface Payment {
  readonly body: string;
  readonly from: Address;
  readonly nonce: Hex;
}

export interface Outcome {
  readonly payment: Payment;
  /** When it was sent, ms since the run's start. */
  readonly at: number;
  readonly kind: Kind;
  readonly ms: number;
  /** The error code of a refusal, or the socket error of a connection that broke. */
  readonly code?: string;
  /** A refusal's message, its start. */
  readonly message?: string;
  readonly hash?: Hex;
}

/**
 * Signed payments, ahead of the senders: a background loop keeps `ahead` of them ready so signing
 * (a few ms each) is not on a request's clock. Valid for an hour, each with a fresh nonce.
 */
export class PaymentFeed {
  readonly #ready: Payment[] = [];
  #signed = 0;
  #ahead = 0;
  #filling: Promise<void> | undefined;
  readonly #devnet: Devnet;

  constructor(devnet: Devnet) {
    this.#devnet = devnet;
  }

  async #sign(): Promise<Payment> {
    const payers = this.#devnet.payers;
    const payer = payers[this.#signed++ % payers.length] as DevAccount;
    const request = await signSampleRequest(this.#devnet, { payer, validForSeconds: 3600 });
    const auth = (request as { payload: { payload: { authorization: Record<string, string> } } })
      .payload.payload.authorization;
    return {
      body: JSON.stringify(request),
      from: auth.from as Address,
      nonce: auth.nonce as Hex,
    };
  }

  /** Keeps `count` signed payments ready from now on (signing in the background). */
  keepAhead(count: number): Promise<void> {
    this.#ahead = count;
    this.#filling ??= (async () => {
      while (this.#ready.length < this.#ahead) this.#ready.push(await this.#sign());
    })().finally(() => {
      this.#filling = undefined;
    });
    return this.#filling;
  }

  /** The next signed payment (signed now if none is ready). */
  async take(): Promise<Payment> {
    const payment = this.#ready.shift() ?? (await this.#sign());
    if (this.#ready.length < this.#ahead / 2) void this.keepAhead(this.#ahead);
    return payment;
  }
}

function kindOf(answer: Posted): { kind: Kind; code?: string; hash?: Hex; message?: string } {
  if (answer.status === 0) {
    const refused = /ECONNREFUSED/.test(answer.error ?? "");
    return { kind: refused ? "refused" : "cut", code: answer.error ?? "?" };
  }
  let body: { success?: unknown; error?: unknown; message?: unknown; transactionHash?: unknown } =
    {};
  try {
    body = JSON.parse(answer.text) as typeof body;
  } catch {
    return { kind: "other", code: `${answer.status} not JSON` };
  }
  if (answer.status === 200 && body.success === true) {
    return { kind: "ok", hash: body.transactionHash as Hex };
  }
  const code = String(body.error ?? answer.status);
  const message = String(body.message ?? "").slice(0, 160);
  const hash = typeof body.transactionHash === "string" ? (body.transactionHash as Hex) : undefined;
  const kind =
    code === "overloaded" ? "overloaded" : code === "settlement_pending" ? "pending" : "other";
  return hash ? { kind, code, message, hash } : { kind, code, message };
}

/** Settles payments at `url`, each answer kept as an Outcome; never throws. */
export class Settler {
  readonly outcomes: Outcome[] = [];
  readonly #target: URL;
  /** One agent per client address (127.0.0.1, .2, ...): sellers' servers, each its own client. */
  readonly #agents: http.Agent[];
  readonly #t0: number;
  #inFlight = 0;
  #sent = 0;

  constructor(url: string, t0: number, clients: number) {
    this.#target = new URL(`${url}/settle`);
    this.#t0 = t0;
    this.#agents = Array.from(
      { length: clients },
      (_, i) =>
        new http.Agent({
          keepAlive: true,
          maxSockets: Number.POSITIVE_INFINITY,
          localAddress: `127.0.0.${i + 1}`,
        }),
    );
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Sends one payment; resolves with its outcome once answered (or the connection broke). */
  async settle(payment: Payment, timeoutMs = 120_000, agent?: http.Agent): Promise<Outcome> {
    const at = performance.now() - this.#t0;
    this.#inFlight += 1;
    const mine = this.#agents[this.#sent++ % this.#agents.length] as http.Agent;
    const answer = await postOnce(this.#target, payment.body, agent ?? mine, timeoutMs);
    this.#inFlight -= 1;
    const outcome = { payment, at, ms: answer.ms, ...kindOf(answer) };
    this.outcomes.push(outcome);
    return outcome;
  }

  /** Closed loop: `concurrency` settles at a time for `seconds`; successes a second. */
  async closedLoop(feed: PaymentFeed, concurrency: number, seconds: number): Promise<number> {
    const started = performance.now();
    const end = started + seconds * 1000;
    let ok = 0;
    const worker = async () => {
      while (performance.now() < end) {
        if ((await this.settle(await feed.take())).kind === "ok") ok += 1;
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return ok / ((performance.now() - started) / 1000);
  }

  /**
   * Open loop: `rate` settles a second for `seconds`, sent on schedule whatever is in flight
   * (a client that does not wait for the last answer). Resolves when the last one is sent.
   */
  async openLoop(feed: PaymentFeed, rate: number, seconds: number): Promise<void> {
    const started = performance.now();
    let sent = 0;
    while (performance.now() - started < seconds * 1000) {
      const due = Math.floor(((performance.now() - started) / 1000) * rate);
      for (; sent < due; sent++) void feed.take().then((p) => this.settle(p));
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  close(): void {
    for (const agent of this.#agents) agent.destroy();
  }
}

export interface Window {
  /** Start, in seconds from the drop (negative: during the overload). */
  readonly from: number;
  readonly offered: number;
  readonly ok: number;
  readonly overloaded: number;
  readonly pending: number;
  readonly other: number;
  readonly p50: number;
  readonly p99: number;
}

/** The 10 s windows, by send time, of outcomes sent from `start` to `end` (ms), `drop` the zero. */
export function windows(
  outcomes: readonly Outcome[],
  start: number,
  end: number,
  drop: number,
): Window[] {
  const result: Window[] = [];
  for (let from = start; from + 10_000 <= end + 500; from += 10_000) {
    const inside = outcomes.filter((o) => o.at >= from && o.at < from + 10_000);
    const count = (kind: Kind) => inside.filter((o) => o.kind === kind).length;
    const latencies = inside.filter((o) => o.kind === "ok").map((o) => o.ms);
    result.push({
      from: Math.round((from - drop) / 1000),
      offered: inside.length,
      ok: count("ok"),
      overloaded: count("overloaded"),
      pending: count("pending"),
      other: inside.length - count("ok") - count("overloaded") - count("pending"),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
    });
  }
  return result;
}

/**
 * Seconds from the drop to the start of the first window after it from which every window is
 * at least `share` successes; undefined if the last one is not.
 */
export function recoveredAfter(all: readonly Window[], share = 0.95): number | undefined {
  const after = all.filter((w) => w.from >= 0);
  let first: number | undefined;
  for (const w of after) {
    const good = w.ok >= share * w.offered;
    if (!good) first = undefined;
    else first ??= w.from;
  }
  return first;
}

export function windowTable(all: readonly Window[]): string {
  const header = [
    "from drop, s",
    "offered",
    "ok",
    "overloaded",
    "pending",
    "other",
    "ok %",
    "p50 ms",
    "p99 ms",
  ];
  const rows = all.map((w) => [
    String(w.from),
    String(w.offered),
    String(w.ok),
    String(w.overloaded),
    String(w.pending),
    String(w.other),
    w.offered ? ((100 * w.ok) / w.offered).toFixed(0) : "-",
    Number.isNaN(w.p50) ? "-" : w.p50.toFixed(0),
    Number.isNaN(w.p99) ? "-" : w.p99.toFixed(0),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => c.padStart(widths[i] ?? 0)).join("  ");
  return [line(header), ...rows.map(line)].join("\n");
}

/** Counts of outcomes by kind (and by code for refusals and errors). */
export function tally(outcomes: readonly Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const key =
      o.kind === "ok" || o.kind === "overloaded" || o.kind === "pending"
        ? o.kind
        : `${o.kind} ${o.code ?? ""}`.trim();
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** The refusals' and errors' messages, numbers and hashes masked, most frequent first. */
export function messages(outcomes: readonly Outcome[], top = 8): string[] {
  const counts = new Map<string, number>();
  for (const o of outcomes) {
    if (o.kind === "ok") continue;
    const shape = `${o.kind} ${o.code ?? ""}: ${o.message ?? ""}`
      .replace(/0x[0-9a-fA-F]+/g, "0x…")
      .replace(/\d+(\.\d+)?/g, "N");
    counts.set(shape, (counts.get(shape) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([shape, n]) => `${String(n).padStart(6)}  ${shape}`);
}
