/**
 * The fault soak (issue 19): two `facilitator serve` replicas on one PostgreSQL store settle
 * distinct payments at a fixed concurrency (a client told 503 waits 250 ms before its next one)
 * while PostgreSQL is stopped (fast shutdown, back after 3 s) and, later, one replica is killed
 * with SIGKILL (and started again 5 s later); then every
 * payment is sent once more, each retried while its answer says to retry. Then it counts what
 * must all be 0: double successes (a payment answered success by two requests), landed but refused
 * (paid on chain, never answered success), lost (answered success, not on chain), and settlements
 * left open after the reconcilers' passes; and checks that the payee got exactly one transfer per
 * landed payment. Exits 1 if any count is not 0.
 *
 *   npm run build && npm run bench:faults
 *   BENCH_FAULT_PAYMENTS=2000 BENCH_FAULT_CONCURRENCY=8 npm run bench:faults
 */
import pg from "pg";
import { createPublicClient, type Hex, http, parseAbi } from "viem";
import { startDevnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";
import { startPostgres } from "../test/helpers/postgres.js";
import { post, setting, stopChild } from "./lib.js";
import { devAccount, type ServerProcess, startFacilitator } from "./settle-lib.js";

const PAYMENTS = Math.floor(setting("BENCH_FAULT_PAYMENTS", 2000));
const CONCURRENCY = Math.floor(setting("BENCH_FAULT_CONCURRENCY", 8));
const STORE_STOP_AT = Math.floor(PAYMENTS * 0.3);
const KILL_AT = Math.floor(PAYMENTS * 0.65);
const REQUEST_TIMEOUT_MS = 30_000;
/** Answers that say "retry": the store away, in progress, pending, or no answer at all. */
const RETRYABLE = (status: number, error: unknown) =>
  status === 0 || status === 503 || status === 409 || error === "settlement_pending";

const tokenAbi = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function balanceOf(address owner) view returns (uint256)",
]);

interface Answered {
  readonly status: number;
  readonly success: boolean;
  readonly error?: string | undefined;
  readonly hash?: string | undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function main(): Promise<number> {
  const started = Date.now();
  const [devnet, postgres] = await Promise.all([startDevnet(), startPostgres()]);
  const store = await postgres.freshDatabase("faults");
  const replicaEnv = (index: number) => ({
    FACILITATOR_PRIVATE_KEY: devAccount([0, 6][index] as number).privateKey,
    FACILITATOR_STORE_LEASE_SECONDS: "3",
    FACILITATOR_RECONCILE_SECONDS: "1",
    FACILITATOR_RECONCILE_IDLE_SECONDS: "2",
  });
  const startReplica = (index: number) =>
    startFacilitator(["--store", store, "--rpc-url", devnet.rpcUrl], replicaEnv(index)).ready;
  const replicas: (ServerProcess | undefined)[] = await Promise.all([0, 1].map(startReplica));
  try {
    console.log(
      `fault soak: ${PAYMENTS} payments at concurrency ${CONCURRENCY} over 2 replicas on one PostgreSQL store; store stopped at #${STORE_STOP_AT} (back after 3 s), replica 1 killed at #${KILL_AT} (started again 5 s later)`,
    );
    const bodies = await Promise.all(
      Array.from({ length: PAYMENTS }, (_, i) =>
        signSampleRequest(devnet, { payer: devnet.payers[i % devnet.payers.length] }),
      ),
    );
    const texts = bodies.map((b) => JSON.stringify(b));
    const answers: Answered[][] = bodies.map(() => []);
    const client = createPublicClient({ transport: http(devnet.rpcUrl) });
    const payeeBefore = await client.readContract({
      address: devnet.token.address,
      abi: tokenAbi,
      functionName: "balanceOf",
      args: [devnet.payee.address],
    });

    const send = async (i: number, turn: number): Promise<Answered> => {
      const candidates = live();
      const target = candidates[(i + turn) % candidates.length] as ServerProcess;
      const answer = await post(`${target.url}/settle`, texts[i] as string, REQUEST_TIMEOUT_MS);
      const body = answer.body as Record<string, unknown> | undefined;
      const answered: Answered = {
        status: answer.status,
        success: answer.status === 200 && body?.success === true,
        error: typeof body?.error === "string" ? body.error : answer.error,
        hash: typeof body?.transactionHash === "string" ? body.transactionHash : undefined,
      };
      answers[i]?.push(answered);
      return answered;
    };

    // Phase 1: each payment once, with the faults on the way.
    let next = 0;
    const faults: Promise<void>[] = [];
    const phase1 = async () => {
      for (let i = next++; i < PAYMENTS; i = next++) {
        if (i === STORE_STOP_AT) {
          faults.push(
            (async () => {
              await postgres.halt("fast");
              await sleep(3_000);
              await postgres.resume();
            })(),
          );
        }
        if (i === KILL_AT) {
          const doomed = replicas[1];
          replicas[1] = undefined;
          doomed?.child.kill("SIGKILL");
          faults.push(
            (async () => {
              await sleep(5_000);
              replicas[1] = await startReplica(1);
            })(),
          );
        }
        const answered = await send(i, 0);
        // A client told to retry later waits a little before its next payment, as x402 buyers do.
        if (answered.status === 503) await sleep(250);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, phase1));
    await Promise.all(faults);

    // Phase 2: every payment sent once more, retried while the answer says to retry.
    next = 0;
    const phase2 = async () => {
      for (let i = next++; i < PAYMENTS; i = next++) {
        for (let attempt = 1; attempt <= 40; attempt++) {
          const answered = await send(i, attempt);
          if (!RETRYABLE(answered.status, answered.error)) break;
          await sleep(250);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, phase2));

    // The reconcilers' passes: nothing may be left open.
    await sleep(4_000);
    const db = new pg.Client({ connectionString: store });
    await db.connect();
    const open = Number(
      (
        await db.query<{ n: string }>(
          "SELECT count(*) AS n FROM facilitator_settlements WHERE state = 'broadcast' AND key NOT LIKE '%#%'",
        )
      ).rows[0]?.n ?? 0,
    );
    await db.end();

    // What the chain says of each payment.
    const landed = await Promise.all(
      bodies.map((body) => {
        const auth = (body.payload as { payload: { authorization: { from: Hex; nonce: Hex } } })
          .payload.authorization;
        return client.readContract({
          address: devnet.token.address,
          abi: tokenAbi,
          functionName: "authorizationState",
          args: [auth.from, auth.nonce],
        });
      }),
    );
    const payeeAfter = await client.readContract({
      address: devnet.token.address,
      abi: tokenAbi,
      functionName: "balanceOf",
      args: [devnet.payee.address],
    });
    const amount = BigInt(
      (bodies[0] as unknown as { requirements: { amount: string } }).requirements.amount,
    );
    const landedCount = landed.filter(Boolean).length;
    let doubles = 0;
    let refused = 0;
    let lost = 0;
    let mismatched = 0;
    const byOutcome: Record<string, number> = {};
    for (const [i, list] of answers.entries()) {
      const successes = list.filter((a) => a.success);
      if (successes.length > 1) doubles++;
      if (landed[i] && successes.length === 0) refused++;
      if (!landed[i] && successes.length > 0) lost++;
      if (new Set(successes.map((a) => a.hash)).size > 1) mismatched++;
      for (const a of list) {
        const key = a.success ? "200" : `${a.status} ${a.error ?? "?"}`;
        byOutcome[key] = (byOutcome[key] ?? 0) + 1;
      }
    }
    const transfersOk = payeeAfter - payeeBefore === BigInt(landedCount) * amount;
    const counts = {
      payments: PAYMENTS,
      landed: landedCount,
      doubleSuccesses: doubles,
      landedButRefused: refused,
      lost,
      successesWithTwoHashes: mismatched,
      openAfterReconciler: open,
      oneTransferPerLandedPayment: transfersOk,
      seconds: Math.round((Date.now() - started) / 1000),
    };
    console.log("answers, all requests:", byOutcome);
    console.log("counts:", counts);
    const ok =
      doubles === 0 &&
      refused === 0 &&
      lost === 0 &&
      mismatched === 0 &&
      open === 0 &&
      transfersOk &&
      landedCount === PAYMENTS;
    console.log(ok ? "all counts 0: every payment paid once and answered once" : "FAILED");
    return ok ? 0 : 1;
  } finally {
    await Promise.all(live().map((r) => stopChild(r.child)));
    await postgres.stop();
    await devnet.stop();
  }

  function live() {
    return replicas.filter((r): r is ServerProcess => r !== undefined);
  }
}

process.exitCode = await main();
