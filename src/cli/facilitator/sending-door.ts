/**
 * serve's door to new broadcasts: once shut, a settlement not yet written down is refused (503,
 * nothing sent), so nothing goes out after its request was answered.
 */
import type { SettlementStore } from "../../core/store.js";
import { FacilitatorError, failure } from "../../protocol/errors.js";

export class SendingDoor {
  #shut = false;

  shut(): void {
    this.#shut = true;
  }

  /** The store as settles see it: the same in every way, but for new records once shut. */
  guard<S extends SettlementStore>(store: S): S {
    const door = this;
    const refuse = () =>
      Promise.reject(
        new FacilitatorError(
          failure(
            "overloaded",
            "the server is stopping: nothing was sent; retry on another replica, or here once it restarts",
            { retryAfterSeconds: 1 },
          ),
        ),
      );
    return new Proxy(store, {
      get(target, name) {
        if (name === "recordSend" && door.#shut) return refuse;
        const value: unknown = Reflect.get(target, name, target);
        // Bound, so that the store's private fields are its own whatever calls them.
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
}
