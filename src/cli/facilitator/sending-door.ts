/**
 * serve's door to new broadcasts: once shut (its stop's time is up), a settlement not yet written
 * down is refused before anything is sent (503 `overloaded`, nothing was sent: settle-loop's
 * path for a store that cannot write), so no transaction goes out after its request was answered.
 * What was written down before is left alone: its replacements and its following go on, and the
 * next start follows it to its end.
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
