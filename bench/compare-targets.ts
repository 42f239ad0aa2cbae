/** bench:compare's targets, from the issues that set them, each said met or not. */
import { fmt } from "./compare-report.js";

export interface Measured {
  readonly verifyRatio: number | undefined;
  readonly oursP99: number | undefined;
  readonly refP50: number | undefined;
  /** Our server's CPU ms per verify at concurrency 64. */
  readonly oursCpu: number | undefined;
  readonly settleRatio: number | undefined;
  /** Our settles/s over the chain's floor's. */
  readonly floorRatio: number | undefined;
  readonly coldRatio: number | undefined;
  /** Beside a bare node on node:http, which loads less than fetch: said, no target. */
  readonly coldHttpRatio: number | undefined;
  readonly rss: number | undefined;
}

const line = (ok: boolean | undefined, text: string) =>
  `  [${ok === undefined ? " n/a " : ok ? " met " : "UNMET"}] ${text}`;

const check = (value: number | undefined, pass: (v: number) => boolean) =>
  value === undefined ? undefined : pass(value);

export function printTargets(m: Measured): void {
  const both = m.oursP99 === undefined || m.refP50 === undefined ? undefined : m.oursP99 < m.refP50;
  console.log("");
  console.log("targets (from the issues):");
  for (const text of [
    line(
      check(m.verifyRatio, (v) => v >= 8),
      `verify c=64 req/s ≥ 8× reference: ${fmt(m.verifyRatio, 2)}×`,
    ),
    line(
      both,
      `our verify p99 at c=64 below the reference's p50 at c=64: ${fmt(m.oursP99, 2)} ms vs ${fmt(m.refP50, 2)} ms`,
    ),
    line(
      check(m.oursCpu, (v) => v <= 0.35),
      `our server CPU per verify at c=64 ≤ 0.35 ms: ${fmt(m.oursCpu, 3)} ms`,
    ),
    line(
      check(m.settleRatio, (v) => v >= 3),
      `settle from one key ≥ 3× reference: ${fmt(m.settleRatio, 2)}×`,
    ),
    line(
      check(m.floorRatio, (v) => v >= 0.9),
      `settle ≥ 0.9× the chain's floor: ${fmt(m.floorRatio, 2)}×`,
    ),
    line(
      check(m.coldRatio, (v) => v <= 1.25),
      `cold verify ≤ 1.25× bare node: ${fmt(m.coldRatio, 2)}×`,
    ),
    line(
      check(m.rss, (v) => v < 150),
      `our serve peak RSS < 150 MiB: ${fmt(m.rss, 1)} MiB`,
    ),
  ]) {
    console.log(text);
  }
}
