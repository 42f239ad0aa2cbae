/** The core: routes a request to the family claiming its network, and keeps what all share. */

import type { Discovery } from "../bazaar/discovery.js";
import type { DenyList, Parties } from "../deny-list/deny-list.js";
import { failure } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import { AmountFloor } from "./amount-floor.js";
import type { Answers } from "./answers.js";
import type { ChainFamily, SupportedKind } from "./family.js";
import { settleOnce } from "./idempotency.js";
import { type Reconciled, type ReconcileOptions, reconcileOnce } from "./reconciler.js";
import type { SettlementRate } from "./settle-rate.js";
import { type SettlementStatus, type StatusQuery, settlementStatus } from "./status.js";
import type { SettlementStore } from "./store.js";
import { failureOfThrown } from "./thrown.js";

export type { SupportedKind } from "./family.js";

export interface SupportedResponse {
  readonly kinds: SupportedKind[];
  readonly extensions: string[];
  readonly signers: Record<string, string[]>;
}

export class FacilitatorCore {
  /** The operator's deny list, if any; the shell replaces it when its file changes. */
  denyList: DenyList | undefined;
  /** Payments of nothing are refused; and below the operator's minimums, when it set some. */
  amountFloor = new AmountFloor();
  /** Settlements a minute per payer and payee, when the operator set a rate. */
  settleRate: SettlementRate | undefined;

  constructor(
    /** In the order they are asked to claim a network. */
    readonly families: readonly ChainFamily[],
    /** Where settlements are written down before they are broadcast. */
    readonly journal: SettlementStore,
    /** Successes written down before they are answered; flushed before the store closes. */
    readonly answers: Answers,
    /** Bazaar discovery, when the store keeps a catalogue. */
    readonly discovery?: Discovery,
  ) {
    // Settlements a previous process left unsettled still count against their payers' balances.
    for (const entry of journal.unsettled()) families.find((family) => family.seed(entry));
  }

  familyOf(network: string): ChainFamily | undefined {
    return this.families.find((family) => family.claims(network));
  }

  async verify(request: PaymentRequest): Promise<VerifyResult> {
    const family = this.familyOf(request.requirements.network);
    if (!family) return { ok: false, failure: unserved(request) };
    let result: VerifyResult;
    try {
      const { refused } = await this.#checked(family, request, "verify");
      if (refused) return { ok: false, ...refused };
      result = await family.verify(request);
    } catch (error) {
      return { ok: false, failure: failureOfThrown(error, "verify") };
    }
    return this.discovery ? this.discovery.afterVerify(request, result) : result;
  }

  async settle(request: PaymentRequest, waitUntil?: WaitUntil): Promise<SettleResult> {
    const family = this.familyOf(request.requirements.network);
    if (!family) return { ok: false, failure: unserved(request) };
    let result: SettleResult;
    const level = waitUntil ?? request.waitUntil ?? "confirmed";
    try {
      const { refused, parties } = await this.#checked(family, request, "settle");
      if (refused) return { ok: false, ...refused };
      result = await settleOnce(
        this.journal,
        request,
        () => this.#counted(family, request, level, parties),
        (transaction) => family.stillOnChain(request, transaction),
      );
    } catch (error) {
      result = { ok: false, failure: failureOfThrown(error, "settle") };
    }
    if (!result.ok && result.failure.code === "chain_unavailable") {
      family.chainTrouble?.(request);
      return { ...result, failure: { ...result.failure, status: 500 } };
    }
    return this.discovery ? this.discovery.afterSettle(request, result, level) : result;
  }

  /** Refused before any chain call: denied, moving too little, over a settle rate (verify too). */
  async #checked(family: ChainFamily, request: PaymentRequest, op: "verify" | "settle") {
    const list = this.denyList;
    let parties: Parties | undefined;
    if ((list && list.size > 0) || this.settleRate) {
      const named = await family.parties?.(request);
      parties = {
        payers: named?.payers ?? [],
        payees: [request.requirements.payTo, ...(named?.payees ?? [])],
      };
    }
    const denied = parties && list?.refusal(parties);
    const moved = denied ? undefined : family.moves?.(request, op);
    const small = moved && moved !== "nothing" ? this.amountFloor.refusal(moved) : undefined;
    const waits = denied || small ? undefined : parties && this.settleRate?.refusal(parties);
    const failure = small ?? waits;
    return { refused: denied ?? (failure ? { failure } : undefined), parties };
  }

  /** One settle taken from its parties' rates (once per payment-identifier); given back if unsent. */
  async #counted(
    family: ChainFamily,
    request: PaymentRequest,
    level: WaitUntil,
    parties: Parties | undefined,
  ) {
    const rate = this.settleRate;
    if (!rate || !parties) return family.settle(request, level);
    const taken = rate.take(parties);
    if (!taken.ok) return { ok: false as const, failure: taken.failure };
    let result: SettleResult | undefined;
    try {
      result = await family.settle(request, level);
      return result;
    } finally {
      if (!result?.transactionHash || level === "simulated") taken.release();
    }
  }

  /** One reconciler pass: every settlement not at its end, followed and written down. */
  reconcile(options?: ReconcileOptions): Promise<Reconciled[]> {
    return reconcileOnce(this.families, this.journal, options);
  }

  /** What we know of a settlement: the store's record and the chain's word. */
  status(query: StatusQuery): Promise<SettlementStatus> {
    return settlementStatus(this.families, this.journal, query);
  }

  /** The kinds every family serves, exactly those verify and settle accept. */
  async supported(): Promise<SupportedResponse> {
    const parts = await Promise.all(this.families.map((family) => family.supported()));
    return {
      kinds: parts.flatMap((part) => part.kinds),
      extensions: [
        ...new Set([
          ...parts.flatMap((part) => part.extensions),
          ...(this.discovery ? ["bazaar"] : []),
        ]),
      ],
      signers: Object.assign({}, ...parts.map((part) => part.signers)),
    };
  }
}

function unserved(request: PaymentRequest) {
  return failure(
    "unsupported_network",
    `"${request.requirements.network}" is not a network any chain family here serves`,
  );
}
