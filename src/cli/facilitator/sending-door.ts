/** The door to new broadcasts: serve's, shut as it stops; settle's, held while the pool is read. */
import type { SettlementStore } from "../../core/store.js";
import { FacilitatorError, failure } from "../../protocol/errors.js";

export class SendingDoor {
  #shut = false;
  #clear: Promise<void> = Promise.resolve();

  shut(): void {
    this.#shut = true;
  }

  /** New records wait for `clear`; if it rejects, they fail with its error. */
  hold(clear: Promise<void>): void {
    clear.catch(() => undefined);
    this.#clear = clear;
  }

  /** The store as settles see it: the same in every way, but for new records once shut or held. */
  guard<S extends SettlementStore>(store: S): S {
    const record = store.recordSend.bind(store);
    const recordSend: SettlementStore["recordSend"] = (...args) => {
      if (!this.#shut) return this.#clear.then(() => record(...args));
      const why =
        "the server is stopping: nothing was sent; retry on another replica, or here once it restarts";
      return Promise.reject(
        new FacilitatorError(failure("overloaded", why, { retryAfterSeconds: 1 })),
      );
    };
    return new Proxy(store, {
      get(target, name) {
        if (name === "recordSend") return recordSend;
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
}
