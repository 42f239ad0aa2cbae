/**
 * bench:faults' provider mode (issue 38): two `facilitator serve` replicas on one PostgreSQL
 * store reach the devnet's anvil only through the provider proxy (test/helpers/rpc-proxy.ts) in
 * two of a hosted provider's ways at once: reads served by a replica 2 blocks behind (`lagBlocks`,
 * on 2 s blocks as on Base) and 1 HTTP request in 5 answered 429 with `Retry-After: 1` and an
 * Infura-style body (`rateLimit`). Distinct payments are settled at a fixed concurrency (every
 * fourth `waitUntil: "submitted"`), then each is sent once more (a retry of a payment just
 * settled is what a lagging replica gets wrong), retried while its answer says to retry; the
 * reconcilers are given until nothing is left open.
 *
 * Counts what must be 0: double successes (a payment answered success by two requests), lost
 * (answered success, not on chain), landed but never answered success, settlements left open;
 * and checks the payee got exactly one transfer per landed payment. Exits 1 otherwise.
 *
 *   npm run build && npm run bench:faults -- --provider
 *   BENCH_FAULT_PAYMENTS=400 BENCH_FAULT_CONCURRENCY=16 npm run bench:faults -- --provider
 */
import pg from "pg";
import { createTestClient, http } from "viem";
import { startDevnet } from "../src/evm/devnet/index.js";
import { startPostgres } from "../test/helpers/postgres.js";
import { startRpcProxy } from "../test/helpers/rpc-proxy.js";
import { type Answer, chainView, retryEach, signPayments, sleep, tally } from "./faults-lib.js";
import { post, setting, stopChild } from "./lib.js";
import { devAccount, type ServerProcess, startFacilitator } from "./settle-lib.js";

const PAYMENTS = Math.floor(setting("BENCH_FAULT_PAYMENTS", 200));
const CONCURRENCY = Math.floor(setting("BENCH_FAULT_CONCURRENCY", 16));
const REQUEST_TIMEOUT_MS = 60_000;
const SETTLE_DOWN_MS = 120_000;

interface Answered extends Answer {
  readonly message?: string | undefined;
}

export async function providerSoak(): Promise<number> {
  const started = Date.now();
  const [devnet, postgres] = await Promise.all([startDevnet(), startPostgres()]);
  const store = await postgres.freshDatabase("faults_provider");
  // Set up on the devnet's usual mining; from here on a block every 2 s, none in between.
  const anvil = createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) });
  await anvil.mine({ blocks: 3 });
  await anvil.setAutomine(false);
  await anvil.setIntervalMining({ interval: 2 });
  const proxy = await startRpcProxy(devnet.rpcUrl, {
    lagBlocks: 2,
    rateLimit: { every: 5, retryAfter: 1 },
  });
  const replicas: ServerProcess[] = [];
  try {
    for (const index of [0, 6]) {
      const server = await startFacilitator(["--store", store, "--rpc-url", proxy.url], {
        FACILITATOR_PRIVATE_KEY: devAccount(index).privateKey,
        FACILITATOR_STORE_LEASE_SECONDS: "3",
        FACILITATOR_RECONCILE_SECONDS: "1",
        FACILITATOR_RECONCILE_IDLE_SECONDS: "2",
      }).ready;
      replicas.push(server);
    }
    console.log(
      `fault soak, provider mode: ${PAYMENTS} payments (every fourth waitUntil submitted) at concurrency ${CONCURRENCY} over 2 replicas on one PostgreSQL store, through a provider whose reads lag 2 blocks (2 s blocks) and which answers 1 request in 5 with 429 (Retry-After: 1); then each payment sent again`,
    );
    const { bodies, texts } = await signPayments(devnet, PAYMENTS);
    const answers: Answered[][] = bodies.map(() => []);
    const chain = chainView(devnet, bodies);
    const payeeBefore = await chain.payeeBalance();

    const send = async (i: number, turn: number): Promise<Answered> => {
      const target = replicas[(i + turn) % replicas.length] as ServerProcess;
      const answer = await post(`${target.url}/settle`, texts[i] as string, REQUEST_TIMEOUT_MS);
      const body = answer.body as Record<string, unknown> | undefined;
      const message = body?.message;
      const answered: Answered = {
        status: answer.status,
        success: answer.status === 200 && body?.success === true,
        error: typeof body?.error === "string" ? body.error : answer.error,
        hash: typeof body?.transactionHash === "string" ? body.transactionHash : undefined,
        message: typeof message === "string" ? message : undefined,
      };
      answers[i]?.push(answered);
      return answered;
    };
    // Each payment once, then once more on the other replica, each retried while told to.
    for (const round of [0, 1]) {
      await retryEach(PAYMENTS, CONCURRENCY, (i, attempt) => send(i, round + attempt));
    }

    const db = new pg.Client({ connectionString: store });
    await db.connect();
    const openQuery =
      "SELECT key, state, hashes FROM facilitator_settlements WHERE state IN ('broadcast', 'submitted')";
    const settleDown = Date.now();
    let openRows = (await db.query(openQuery)).rows;
    while (openRows.length > 0 && Date.now() - settleDown < SETTLE_DOWN_MS) {
      await sleep(1_000);
      openRows = (await db.query(openQuery)).rows;
    }
    await db.end();

    const landed = await chain.landed();
    const payeeAfter = await chain.payeeBalance();
    const { doubles, refused, lost, byOutcome } = tally(answers, landed);
    const landedCount = landed.filter(Boolean).length;
    const transfersOk = payeeAfter - payeeBefore === BigInt(landedCount) * chain.amount;
    const counts = {
      payments: PAYMENTS,
      landed: landedCount,
      doubleSuccesses: doubles.length,
      lost: lost.length,
      landedButRefused: refused.length,
      open: openRows.length,
      oneTransferPerLandedPayment: transfersOk,
      providerRequests: proxy.requests.count,
      answered429: proxy.refused.rateLimited,
      seconds: Math.round((Date.now() - started) / 1000),
    };
    console.log("answers, all requests:", byOutcome);
    console.log("counts:", counts);
    for (const [what, list] of [
      ["lost", lost],
      ["landed but refused", refused],
      ["double success", doubles],
    ] as const) {
      for (const i of list.slice(0, 10))
        console.log(`${what}:`, { payment: i, answers: answers[i] });
    }
    for (const row of openRows.slice(0, 10)) console.log("open:", row);
    const ok =
      doubles.length === 0 &&
      lost.length === 0 &&
      refused.length === 0 &&
      openRows.length === 0 &&
      transfersOk &&
      landedCount === PAYMENTS;
    console.log(ok ? "all counts 0: every payment paid once and answered once" : "FAILED");
    return ok ? 0 : 1;
  } finally {
    await Promise.all(replicas.map((r) => stopChild(r.child)));
    await proxy.close();
    await postgres.stop();
    await devnet.stop();
  }
}
