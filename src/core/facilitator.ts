/**
 * The core: routes a parsed payment request to the chain family that claims its network, and keeps
 * what every family shares. A `payment-identifier` settles once whatever the family; a settle that
 * could not reach its chain is a 500 (the settlement failed, not the request).
 */
import { failure } from "../protocol/errors.js";
import type { PaymentRequest } from "../protocol/request.js";
import type { SettleResult, VerifyResult } from "../protocol/results.js";
import type { WaitUntil } from "../protocol/schemas.js";
import type { Answers } from "./answers.js";
import type { DenyList } from "./deny-list.js";
import type { Discovery } from "./discovery.js";
import type { ChainFamily, SupportedKind } from "./family.js";
import { settleOnce } from "./idempotency.js";
import { type Reconciled, type ReconcileOptions, reconcileOnce } from "./reconciler.js";
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
  /** Where settlements are written down before they are broadcast. */
  readonly journal: SettlementStore;
  /** In the order they are asked to claim a network. */
  readonly families: readonly ChainFamily[];
  /** Successes written down before they are answered; flushed before the store closes. */
  readonly answers: Answers;
  /** Bazaar discovery (core/discovery.ts), when the store keeps a catalogue. */
  readonly discovery: Discovery | undefined;
  /** The operator's deny list, if any; the shell replaces it when its file changes. */
  denyList: DenyList | undefined;

  constructor(
    families: readonly ChainFamily[],
    journal: SettlementStore,
    answers: Answers,
    discovery?: Discovery,
  ) {
    this.families = families;
    this.journal = journal;
    this.answers = answers;
    this.discovery = discovery;
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
      const denied = await this.#denied(family, request);
      if (denied) return { ok: false, ...denied };
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
      const denied = await this.#denied(family, request);
      if (denied) return { ok: false, ...denied };
      result = await settleOnce(
        this.journal,
        request,
        () => family.settle(request, level),
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

  /** Refused by the deny list, before any chain call: a payer the family reads, or the payee. */
  async #denied(family: ChainFamily, request: PaymentRequest) {
    const list = this.denyList;
    if (!list || list.size === 0) return undefined;
    const named = await family.parties?.(request);
    return list.refusal({
      payers: named?.payers ?? [],
      payees: [request.requirements.payTo, ...(named?.payees ?? [])],
    });
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
