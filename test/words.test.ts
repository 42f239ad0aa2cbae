/** Durations in messages are read by people: "expired 62 s ago", not two Unix times. */
import { describe, expect, test } from "vitest";
import { durationInWords, tooEarly, tooLate } from "../src/protocol/words.js";

describe("durations in words", () => {
  test.each([
    [0, "0 s"],
    [62, "62 s"],
    [119, "119 s"],
    [125, "2 min 5 s"],
    [3600, "1 h"],
    [3723, "1 h 2 min"],
    [86_400, "1 day"],
    [3 * 86_400 + 7200 + 5, "3 days 2 h"],
  ])("%i seconds is %s", (seconds, words) => {
    expect(durationInWords(seconds)).toBe(words);
  });

  test("deadlines say how long ago or how soon, then the field and its value", () => {
    expect(
      tooLate("the authorization", "payload.payload.authorization.validBefore", 1000n, 1062n, 6n),
    ).toBe("the authorization expired 62 s ago (payload.payload.authorization.validBefore 1000)");
    expect(tooLate("the authorization", "validBefore", 1003n, 1000n, 6n)).toBe(
      "the authorization expires in 3 s, less than the 6 s a settlement needs (validBefore 1003)",
    );
    expect(tooEarly("the authorization", "validAfter", 1125n, 1000n)).toBe(
      "the authorization is valid only in 2 min 5 s (validAfter 1125)",
    );
  });
});
