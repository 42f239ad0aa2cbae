/**
 * A catalogue entry belongs to the payee that first listed it (issue 37 item 4): payments naming
 * its resource to other payTos add their requirements beside the owner's, at most four, the one
 * paid longest ago making room, and change nothing else; `?payTo=<owner>` always finds it. Both
 * stores (a journal file, a real PostgreSQL), across a restart; an entry an older version let
 * others fill loads and is given back by its owner's next payment.
 */
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { catalogueUpdate, samePayee } from "../src/bazaar/catalogue.js";
import type { SettlementStore } from "../src/core/store.js";
import { catalogueStores, entry, PAYEE, WIDE } from "./helpers/catalogue.js";
import { type Postgres, startPostgres } from "./helpers/postgres.js";

let postgres: Postgres;
let dir: string;
beforeAll(async () => {
  postgres = await startPostgres();
  dir = await mkdtemp(path.join(os.tmpdir(), "facilitator-ownership-"));
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

describe.each(catalogueStores(() => ({ postgres, dir })))("$name", (kind) => {
  test("an entry belongs to its payee: 100 payments by others naming its URL change nothing of the seller's", async () => {
    const { store, restart } = await kind.make();
    const catalogue = store.catalogue;
    if (!catalogue) throw new Error("the store keeps no catalogue");
    const url = "https://seller.example/weather";
    const seller = entry(url, { description: "The seller's weather", tags: ["weather"] });
    expect(await catalogue.put(seller, WIDE)).toEqual({ added: true });
    const attacker = (i: number) => `0x${i.toString(16).padStart(4, "0")}${"a7".repeat(18)}`;
    for (let i = 0; i < 100; i++) {
      const taken = entry(url, {
        payTo: attacker(i),
        payer: attacker(i),
        network: i % 2 ? "eip155:8453" : "eip155:84532",
        description: `Pay ${attacker(i)} instead`,
        tags: ["free"],
      });
      expect(await catalogue.put(taken, WIDE)).toEqual({ added: false });
    }
    const check = async (reading: SettlementStore) => {
      const found = await reading.catalogue?.list({ payTo: PAYEE.toLowerCase() }, 10, 0);
      expect(found?.items.map((e) => e.resource)).toEqual([url]);
      const [kept] = found?.items ?? [];
      expect([kept?.description, kept?.tags, kept?.payTo]).toEqual([
        "The seller's weather",
        ["weather"],
        PAYEE,
      ]);
      // The seller's requirement first; beside it, the four others paid last, newest first.
      expect(kept?.accepts.map((a) => a.payTo)).toEqual([
        PAYEE,
        attacker(99),
        attacker(98),
        attacker(97),
        attacker(96),
      ]);
      expect((await reading.catalogue?.search({}, ["free", "instead"], 10, 0))?.items).toEqual([]);
    };
    await check(store);
    // The seller's next payment (its address in another case) updates what the entry says.
    await catalogue.put(
      entry(url, { payTo: PAYEE.toLowerCase(), network: "eip155:8453", description: "Newer" }),
      WIDE,
    );
    const [updated] = (await catalogue.list({}, 10, 0)).items;
    expect(updated?.description).toBe("Newer");
    expect(updated?.accepts.slice(0, 2).map((a) => [a.payTo, a.network])).toEqual([
      [PAYEE.toLowerCase(), "eip155:8453"],
      [PAYEE, "eip155:84532"],
    ]);
    const reopened = await restart();
    try {
      const [kept] = (await reopened.catalogue?.list({ payTo: PAYEE }, 10, 0))?.items ?? [];
      expect(kept?.description).toBe("Newer");
      expect(kept?.accepts.map((a) => a.payTo)).toEqual([
        PAYEE.toLowerCase(),
        PAYEE,
        attacker(99),
        attacker(98),
        attacker(97),
        attacker(96),
      ]);
    } finally {
      await reopened.close();
    }
  });

  test("an entry an older version let others take over is given back by its owner's next payment", async () => {
    const { store } = await kind.make();
    const catalogue = store.catalogue;
    if (!catalogue) throw new Error("the store keeps no catalogue");
    try {
      const url = "https://taken.example/x";
      const other = "0x000000000000000000000000000000000000a77a";
      // As the old merge left it: the owner's requirement pushed out, another's description.
      const taken = entry(url, { payTo: other, description: "Pay me instead" });
      expect(await catalogue.put({ ...taken, payTo: PAYEE, accepts: taken.accepts }, WIDE)).toEqual(
        { added: true },
      );
      await catalogue.put(entry(url, { description: "The owner's" }), WIDE);
      const [kept] = (await catalogue.list({ payTo: PAYEE }, 10, 0)).items;
      expect(kept?.description).toBe("The owner's");
      expect(kept?.accepts.map((a) => a.payTo)).toEqual([PAYEE, other]);
    } finally {
      await store.close();
    }
  });
});

test("a Solana payee in another case is another payee: it cannot take the entry over", () => {
  const owner = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU";
  const listed = entry("https://sol.example/x", { payTo: owner, description: "The owner's" });
  const other = entry("https://sol.example/x", {
    payTo: owner.toLowerCase(),
    description: "Pay me instead",
  });
  const { entry: kept } = catalogueUpdate(listed, other);
  expect(kept.description).toBe("The owner's");
  expect(kept.accepts.map((a) => a.payTo)).toEqual([owner, owner.toLowerCase()]);
  expect(samePayee(owner, owner.toLowerCase())).toBe(false);
  expect(samePayee(PAYEE, PAYEE.toLowerCase())).toBe(true);
});
