/** Connections shared between addresses (issues 9, 18): past `max` or the address's share, one 503
 * and closed (past twice `max`, unanswered); a full server drops the biggest holder's idle one. */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** Connections served at once; the bench's 64 verifies + 32 settles use 96. */
export const DEFAULT_MAX_CONNECTIONS = 512;

/** One address's default share: half the limit, so another client always fits. */
export function defaultPerClient(maxConnections: number): number {
  return Math.ceil(maxConnections / 2);
}

/** The address a connection counts under: IPv4, or an IPv6 /64 (one host often holds a /64). */
export function clientOf(address: string | undefined): string {
  if (!address) return "";
  const plain = address.split("%")[0] ?? "";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(plain);
  if (mapped?.[1]) return mapped[1];
  if (!plain.includes(":")) return plain;
  const [head = "", tail] = plain.split("::");
  const groups = (text: string | undefined) =>
    // A trailing dotted IPv4 part fills two groups; only its count matters for the prefix.
    text ? text.split(":").flatMap((g) => (g.includes(".") ? ["0", "0"] : [g])) : [];
  const first = groups(head);
  const full =
    tail === undefined
      ? first
      : [...first, ...Array<string>(Math.max(0, 8 - first.length - groups(tail).length)).fill("0")];
  const prefix = full
    .slice(0, 4)
    .map((g) => Number.parseInt(g || "0", 16).toString(16))
    .join(":");
  return `${prefix}::/64`;
}

interface Connection {
  readonly client: string;
  readonly served: boolean;
  /** Requests whose headers arrived and whose answer is not finished. */
  inFlight: number;
}

/** What one client address holds. Idle connections in the order they became idle. */
interface Holder {
  open: number;
  served: number;
  readonly idleServed: Set<Socket>;
  readonly idleTurnedAway: Set<Socket>;
}

export interface ConnectionLimits {
  readonly max: number;
  readonly perClient: number;
}

export class ConnectionGate {
  readonly #connections = new Map<Socket, Connection>();
  readonly #holders = new Map<string, Holder>();
  #served = 0;

  constructor(
    server: Server,
    private readonly limits: ConnectionLimits,
  ) {
    server.on("connection", (socket: Socket) => this.#admit(socket));
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const socket = request.socket;
      const connection = this.#connections.get(socket);
      if (!connection) return;
      connection.inFlight += 1;
      this.#idleSet(connection)?.delete(socket);
      response.once("close", () => {
        connection.inFlight -= 1;
        // Still counted (not displaced nor closed) and nothing else in flight: idle again.
        if (connection.inFlight === 0 && this.#connections.get(socket) === connection) {
          this.#idleSet(connection)?.add(socket);
        }
      });
    });
  }

  /** Whether requests on this connection are answered 503 instead of served. */
  turnsAway(socket: Socket): boolean {
    return this.#connections.get(socket)?.served === false;
  }

  #admit(socket: Socket): void {
    const client = clientOf(socket.remoteAddress);
    const { max, perClient } = this.limits;
    if (this.#connections.size >= max * 2 && !this.#displace(client, "any")) {
      socket.destroy();
      return;
    }
    const holder = this.#holders.get(client) ?? {
      open: 0,
      served: 0,
      idleServed: new Set<Socket>(),
      idleTurnedAway: new Set<Socket>(),
    };
    const served =
      holder.served < perClient && (this.#served < max || this.#displace(client, "served"));
    this.#holders.set(client, holder);
    const connection: Connection = { client, served, inFlight: 0 };
    this.#connections.set(socket, connection);
    holder.open += 1;
    if (served) {
      holder.served += 1;
      this.#served += 1;
    }
    this.#idleSet(connection)?.add(socket);
    socket.once("close", () => this.#forget(socket));
  }

  #idleSet(connection: Connection): Set<Socket> | undefined {
    const holder = this.#holders.get(connection.client);
    return connection.served ? holder?.idleServed : holder?.idleTurnedAway;
  }

  /** Closes the longest-idle connection of the address holding the most (of all, or of those
   * served), if it holds two more than `client`; a turned-away one first. Says whether it did. */
  #displace(client: string, among: "any" | "served"): boolean {
    const count = (holder: Holder | undefined) =>
      (among === "any" ? holder?.open : holder?.served) ?? 0;
    let top: Holder | undefined;
    for (const [address, holder] of this.#holders) {
      if (address !== client && count(holder) > count(top)) top = holder;
    }
    if (!top || count(top) < count(this.#holders.get(client)) + 2) return false;
    const [victim] =
      among === "any" && top.idleTurnedAway.size > 0 ? top.idleTurnedAway : top.idleServed;
    if (!victim) return false;
    // Forgotten now, not on its close event: the next connection of a burst must see the place.
    this.#forget(victim);
    victim.destroy();
    return true;
  }

  #forget(socket: Socket): void {
    const connection = this.#connections.get(socket);
    if (!connection) return;
    this.#connections.delete(socket);
    const holder = this.#holders.get(connection.client);
    if (!holder) return;
    holder.idleServed.delete(socket);
    holder.idleTurnedAway.delete(socket);
    holder.open -= 1;
    if (connection.served) {
      holder.served -= 1;
      this.#served -= 1;
    }
    if (holder.open === 0) this.#holders.delete(connection.client);
  }
}
