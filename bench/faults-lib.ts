/**
 * What bench:faults' two modes (faults.ts, faults-provider.ts) share: the payments and how each
 * asks to be answered, the rule for "retry", sending each payment again until told otherwise,
 * and what the chain and the answers say of every payment in the end.
 */
import { createPublicClient, type Hex, http, parseAbi } from "viem";
import type { Devnet } from "../src/evm/devnet/index.js";
import { signSampleRequest } from "../src/evm/devnet/sample.js";

/** Every fourth payment is answered once its transaction is in the pool. */
export const SUBMITTED = (i: number) => i % 4 === 3;
/** Answers that say "retry": the store away, in progress, pending, or no answer at all. */
export const RETRYABLE = (status: number, error: unknown) =>
  status === 0 || status === 503 || status === 409 || error === "settlement_pending";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One answer to one request, as far as the counts read it. */
export interface Answer {
  readonly status: number;
  readonly success: boolean;
  readonly error?: string | undefined;
  readonly hash?: string | undefined;
}

/** `count` distinct payments (payers in turn) and the request text each is sent as. */
export async function signPayments(devnet: Devnet, count: number) {
  const bodies = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      signSampleRequest(devnet, { payer: devnet.payers[i % devnet.payers.length] }),
    ),
  );
  const texts = bodies.map((b, i) =>
    JSON.stringify(SUBMITTED(i) ? { ...b, waitUntil: "submitted" } : b),
  );
  return { bodies, texts };
}

/** Each payment sent by `concurrency` workers, again (250 ms apart, 40 times at most) while told to retry. */
export async function retryEach(
  count: number,
  concurrency: number,
  send: (i: number, attempt: number) => Promise<Answer>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      for (let attempt = 0; attempt < 40; attempt++) {
        const answered = await send(i, attempt);
        if (!RETRYABLE(answered.status, answered.error)) break;
        await sleep(250);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

const tokenAbi = parseAbi([
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function balanceOf(address owner) view returns (uint256)",
]);

type Bodies = Awaited<ReturnType<typeof signPayments>>["bodies"];

/** The chain's side: the payee's balance, and which payments' authorizations were used. */
export function chainView(devnet: Devnet, bodies: Bodies) {
  const client = createPublicClient({ transport: http(devnet.rpcUrl) });
  const auths = bodies.map(
    (body) =>
      (body.payload as { payload: { authorization: { from: Hex; nonce: Hex } } }).payload
        .authorization,
  );
  const amount = BigInt(
    (bodies[0] as unknown as { requirements: { amount: string } }).requirements.amount,
  );
  return {
    client,
    auths,
    amount,
    payeeBalance: () =>
      client.readContract({
        address: devnet.token.address,
        abi: tokenAbi,
        functionName: "balanceOf",
        args: [devnet.payee.address],
      }),
    landed: () =>
      Promise.all(
        auths.map((auth) =>
          client.readContract({
            address: devnet.token.address,
            abi: tokenAbi,
            functionName: "authorizationState",
            args: [auth.from, auth.nonce],
          }),
        ),
      ),
  };
}

/** What the answers say against the chain: each list must be empty, `mismatched` 0. */
export function tally(answers: readonly (readonly Answer[])[], landed: readonly boolean[]) {
  const doubles: number[] = [];
  const refused: number[] = [];
  const lost: number[] = [];
  let mismatched = 0;
  const byOutcome: Record<string, number> = {};
  for (const [i, list] of answers.entries()) {
    const successes = list.filter((a) => a.success);
    if (successes.length > 1) doubles.push(i);
    if (landed[i] && successes.length === 0) refused.push(i);
    if (!landed[i] && successes.length > 0) lost.push(i);
    if (new Set(successes.map((a) => a.hash)).size > 1) mismatched++;
    for (const a of list) {
      const key = a.success
        ? SUBMITTED(i)
          ? "200 submitted"
          : "200"
        : `${a.status} ${a.error ?? "?"}`;
      byOutcome[key] = (byOutcome[key] ?? 0) + 1;
    }
  }
  return { doubles, refused, lost, mismatched, byOutcome };
}
