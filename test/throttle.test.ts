/** The payer throttle's window: who is refused, for how long, and who is not. */
import { describe, expect, test } from "vitest";
import { PayerThrottle } from "../src/chain/throttle.js";

const PAYER = "0x00000000000000000000000000000000000000aA";
const MINUTE = 60_000;

describe("PayerThrottle", () => {
  test("refuses after the limit, until the oldest revert leaves the window", () => {
    const throttle = new PayerThrottle({ limit: 3, windowMs: 10 * MINUTE });
    const t0 = 1_000_000;
    throttle.charge(1, PAYER, t0);
    throttle.charge(1, PAYER, t0 + MINUTE);
    expect(throttle.refusal(1, PAYER, t0 + MINUTE)).toBeUndefined();
    throttle.charge(1, PAYER.toLowerCase(), t0 + 2 * MINUTE);

    const refused = throttle.refusal(1, PAYER, t0 + 2 * MINUTE);
    expect(refused).toMatchObject({ code: "payer_throttled", retryAfterSeconds: 8 * 60 });
    expect(refused?.message).toContain("3 settlements from");
    // Another chain, another payer: not held back.
    expect(throttle.refusal(8453, PAYER, t0 + 2 * MINUTE)).toBeUndefined();
    expect(throttle.refusal(1, `0x${"b".repeat(40)}`, t0 + 2 * MINUTE)).toBeUndefined();
    // The first revert leaves the window after 10 minutes: two remain, under the limit.
    expect(throttle.refusal(1, PAYER, t0 + 10 * MINUTE - 1)).toBeDefined();
    expect(throttle.refusal(1, PAYER, t0 + 10 * MINUTE)).toBeUndefined();
  });
});
