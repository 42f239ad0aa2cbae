/** `facilitator serve`: the same core over HTTP, in a worker serve-supervisor.ts restarts. */
import chalk from "chalk";
import { privateKeyToAccount } from "viem/accounts";
import { Reconciler } from "../../../core/reconciler.js";
import { useWasmSecp256k1 } from "../../../evm/chain/secp256k1.js";
import type { Facilitator } from "../../../facilitator.js";
import { type ApiKeys, keyRequired as keyRequiredBy } from "../../../http/callers.js";
import { createHandler } from "../../../http/handler.js";
import { trustedHosts } from "../../../http/hosts.js";
import { DEFAULT_KEY_RATE } from "../../../http/rates.js";
import { startServer } from "../../../http/server.js";
import { caip2 } from "../../../protocol/networks.js";
import { svmFeePayerOfBytes } from "../../../svm/chain/keys.js";
import { facilitatorFrom } from "../../facilitator/facilitator.js";
import { SendingDoor } from "../../facilitator/sending-door.js";
import { isPortTaken, UsageError } from "../../io/errors.js";
import { logJson } from "../../io/output.js";
import { lockForServe } from "../../locks/settlement-locks.js";
import { describeSignerWait, signerWaitEntry } from "../../locks/store-leases.js";
import type { CliConfig } from "../../settings/config.js";
import { resolveSetting } from "../../settings/setting-resolver.js";
import { flagName } from "../../settings/setting-rows.js";
import { SETTINGS } from "../../settings/settings.js";
import { type Log, liveApiKeys, liveDenyList } from "./serve-reload.js";
import { resolveServe, type ServeFlags, type ServeSettings } from "./serve-settings.js";
import type { WorkerMessage } from "./serve-supervisor.js";

/** A reconciler pass every so often (0: none), over settlements unchanged for a while. */
function startReconciler(facilitator: Facilitator, log: Log): Reconciler | undefined {
  const env = process.env;
  const everyMs = resolveSetting(SETTINGS.reconcileEvery, { env });
  if (everyMs === 0) return undefined;
  const idleMs = resolveSetting(SETTINGS.reconcileIdle, { env });
  const reconciler = new Reconciler(async () => {
    const found = await facilitator.reconcile({ idleMs });
    for (const item of found) {
      if (item.outcome === "busy") continue;
      log?.({ time: new Date().toISOString(), event: "reconciled", ...item });
    }
    return found;
  }, everyMs);
  reconciler.start();
  return reconciler;
}

/** Runs the server in this thread until `stopped`; `onListening` learns the port bound. */
export async function serveHere(
  settings: ServeSettings,
  /** `tell`: the port bound, what a stop waits for, and notes while starting (the supervisor's). */
  options: { bannerOnTty: boolean; stopped: Promise<void>; tell: (message: WorkerMessage) => void },
): Promise<number> {
  const keys = [...settings.privateKeys];
  const config: CliConfig = {
    ...settings.config,
    loadPrivateKeys: () => keys,
    loadPrivateKey: () => keys[0],
    loadReceiverAuthorizerKey: () => settings.receiverAuthorizerKey,
    loadSvmFeePayers: () =>
      settings.svmSecretKeys.flatMap((bytes) => svmFeePayerOfBytes(bytes) ?? []),
  };
  const { apiKey, apiKeys, host, port, quiet } = settings;
  const authorizer =
    settings.receiverAuthorizerKey && privateKeyToAccount(settings.receiverAuthorizerKey).address;
  // Our receiver authorizer only when refund requests are told apart: by a receiver-bound API key.
  const sellerKeys = apiKeys?.keys.filter((k) => k.receivers.length > 0).length ?? 0;
  const keyRequired = keyRequiredBy(apiKey, apiKeys);
  // prom-client loads here, in the serving worker only: the CLI's other commands never pay for it.
  const { createMetrics } = await import("../../../http/metrics.js");
  const metrics = await createMetrics();
  const door = new SendingDoor();
  const facilitator = await facilitatorFrom(config, true, {
    server: true,
    storeOwner: settings.storeOwner,
    door,
    metrics,
    offerReceiverAuthorizer: sellerKeys > 0,
    onSignerWait: (wait, store) =>
      options.tell({
        type: "note",
        entry: signerWaitEntry(wait, store),
        text: describeSignerWait(wait, store),
      }),
  });
  metrics.attach(facilitator);
  // A server recovers many signatures: load the faster recovery once, up front.
  await useWasmSecp256k1();
  const log: Log = quiet
    ? undefined
    : (entry) => process.stderr.write(`${JSON.stringify(entry)}\n`);
  // A key blocked by a transaction the node does not mine, and unblocked: one line each, even quiet.
  facilitator.signers.onEvent = ({ event, signer, hole }) =>
    logJson({
      event,
      network: caip2(hole.chainId),
      signer,
      nonce: hole.nonce,
      since: new Date(hole.since).toISOString(),
      reason: hole.reason,
    });
  // Without an API key, the Host header is all that keeps a web page out (DNS rebinding).
  const trustedHost = keyRequired
    ? undefined
    : trustedHosts({ bindHost: host, allowed: settings.allowedHosts });
  // Reachable from other machines with nothing to say who may settle through our keys.
  const exposed = !keyRequired && !/^(127\.|localhost$|::1$|\[::1\]$)/.test(host);
  const apiKeyHow = `${flagName(SETTINGS.apiKey.flag)} (or ${SETTINGS.apiKey.env})`;
  const exposedWarning = `serving on ${host} without an API key: anyone who reaches this port can verify and settle through this facilitator's keys, and GET /settlements is off; pass ${apiKeyHow}`;
  const liveKeys = liveApiKeys(settings, log);
  const stopDenyList = liveDenyList(settings, facilitator, log);
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    const handler = createHandler(facilitator, {
      apiKey,
      apiKeys: liveKeys.current,
      ratePerClient: config.ratePerClient,
      trustedHost,
      // Its answers name this replica's host and process: not for anyone who reaches the port.
      settlementsOff: exposed
        ? `GET /settlements is off: this server listens on ${host} without an API key, and its answers name this facilitator's hosts and processes; serve with ${apiKeyHow} to turn it on, or ask with facilitator status`
        : undefined,
      metrics,
      minSignerBalanceWei: config.minSignerBalanceWei,
    });
    server = await startServer(handler, { ...settings, log });
  } catch (error) {
    if (isPortTaken(error)) {
      throw new UsageError(
        `cannot listen on ${host}:${port}: --port ${port} is taken (another serve, or another program?): pick another, or --port 0 for a free one`,
      );
    }
    throw new UsageError(`cannot listen on ${host}:${port}: ${(error as Error).message}`);
  }
  options.tell({ type: "listening", port: server.port, url: server.url });
  // Every settlement written down is followed to its end, whether or not anyone retries it.
  const reconciler = startReconciler(facilitator, log);

  const controls = controlsInForce(config, apiKeys);
  if (!quiet && options.bannerOnTty) {
    const endpoints = await facilitator.rpc.endpoints();
    const networks = endpoints.map(
      (e) =>
        `${e.solana ?? (e.chainId === undefined ? chalk.red("unreachable") : caip2(e.chainId))} via ${e.url}`,
    );
    if (facilitator.rpc.usesPublicRpcs) {
      networks.push(chalk.dim("well-known networks via their public RPCs (see /supported)"));
    }
    process.stderr.write(
      [
        `${chalk.green("●")} ${chalk.bold("facilitator serve")} listening on ${chalk.bold(server.url)}`,
        `  networks  ${networks.length ? networks.join("\n            ") : chalk.yellow("none: no RPC configured and public RPCs are off")}`,
        `  signers   ${signersLine(facilitator.signers.addresses, facilitator.svmFeePayers)}`,
        ...(authorizer
          ? [
              `  authorizer ${authorizer} ${chalk.dim(sellerKeys > 0 ? `(batch-settlement: signs claims, and refunds for the sellers of ${sellerKeys} API key${sellerKeys === 1 ? "" : "s"})` : "(batch-settlement: signs claims; not offered on /supported, as no API key names a seller whose refunds it may sign: --api-keys-file)")}`,
            ]
          : []),
        `  ${facilitator.journal.shared ? "store  " : "journal"}   ${facilitator.journal.where}`,
        `  auth      ${keyRequired ? `API key required on /verify, /settle, /accepts and /metrics${apiKeys ? ` (${apiKeys.keys.length + (apiKey ? 1 : 0)} keys)` : ""}` : apiKeys ? `${apiKeys.keys.length} named API keys; requests without one are served as anonymous` : exposed ? chalk.yellow(`none: ${exposedWarning}`) : chalk.dim("none (Host header checked)")}`,
        `  controls  ${controlsLine(controls)}`,
        `  docs      ${server.url}/llms.txt`,
        `  probes    ${server.url}/health (live), /readyz (ready), /metrics (Prometheus)`,
        "",
      ].join("\n"),
    );
  } else if (!quiet) {
    logJson({
      event: "listening",
      url: server.url,
      signers: facilitator.signers.addresses,
      ...(facilitator.svmFeePayers.length > 0 ? { svmFeePayers: facilitator.svmFeePayers } : {}),
      ...(authorizer ? { receiverAuthorizer: authorizer } : {}),
      store: facilitator.journal.where,
      controls,
    });
    if (exposed) logJson({ event: "warning", message: exposedWarning });
  }

  await options.stopped;
  liveKeys.stop();
  stopDenyList();
  options.tell({ type: "draining", inFlight: server.inFlight() });
  // Within --shutdown-timeout: new requests 503, those in flight may finish; near the end new
  // broadcasts are refused and the rest answered (settles: settlement_pending).
  const timeout = config.shutdownTimeoutMs;
  const stopStarted = Date.now();
  const left = () => timeout - (Date.now() - stopStarted);
  const answerAt = timeout - Math.min(RESERVE_MS, timeout / 4);
  const timers = [
    setTimeout(() => door.shut(), answerAt - Math.min(DOOR_GRACE_MS, timeout / 10)),
    setTimeout(() => server.answerNow(), answerAt),
  ];
  try {
    await server.close();
  } finally {
    for (const timer of timers) clearTimeout(timer);
  }
  // Whatever ran past its answer (a settle following its transaction) sends nothing new now.
  door.shut();
  await within(reconciler?.stop() ?? Promise.resolve(), left() / 2);
  // Every answer given is written down as given before the store closes.
  await within(facilitator.answers.flush(), left() / 2);
  // Gives up this replica's claims and signer leases at once, rather than when they run out.
  await within(Promise.resolve(facilitator.journal.close()), left());
  return 0;
}

/** The banner's signers: the EVM settlement keys and the Solana fee payers, or what is missing. */
function signersLine(evm: readonly string[], solana: readonly string[]): string {
  const feePayers = solana.map((address) => `${address} ${chalk.dim("(Solana fee payer)")}`);
  if (evm.length === 0 && feePayers.length === 0) {
    return chalk.yellow("none: /settle answers settlement_failed");
  }
  const noEvmKey = chalk.yellow("no EVM key: EVM payments' /settle answers settlement_failed");
  return [...(evm.length > 0 ? evm : [noEvmKey]), ...feePayers].join("\n            ");
}

/** `facilitator serve`: this thread takes the keys and journal, so a restarted worker keeps them. */
export async function runServe(flags: ServeFlags): Promise<number> {
  const settings = resolveServe(flags);
  const locks = settings.config.storeUrl
    ? undefined
    : lockForServe(
        settings.config.journalPath,
        settings.privateKeys.map((key) => privateKeyToAccount(key).address),
      );
  try {
    const { superviseServer } = await import("./serve-supervisor.js");
    return await superviseServer(settings, { onListening: (url) => locks?.listening(url) });
  } finally {
    locks?.release();
  }
}

/** The operator controls a serve runs with, for its banner and its `listening` line. */
function controlsInForce(config: CliConfig, apiKeys: ApiKeys | undefined) {
  const rates = (apiKeys?.keys ?? []).map(
    (k) => [k.name, k.perMinute ?? DEFAULT_KEY_RATE] as const,
  );
  const keyRates = rates.length > 0 ? Object.fromEntries(rates) : undefined;
  // Those not in force are undefined: left out of the `listening` line.
  const { denyList, builderCode, ratePerClient } = config;
  return { denyList, builderCode, ratePerClient, keyRates };
}

function controlsLine(controls: ReturnType<typeof controlsInForce>): string {
  const parts = [
    controls.denyList && `deny list ${controls.denyList} (re-read when it changes)`,
    controls.builderCode && `builder code ${controls.builderCode}`,
    controls.ratePerClient !== undefined &&
      `${controls.ratePerClient} requests a minute per client address`,
    controls.keyRates &&
      `rates per API key: ${Object.entries(controls.keyRates)
        .map(([name, perMinute]) => `${name} ${perMinute}/min`)
        .join(", ")}`,
  ].filter((p): p is string => typeof p === "string" && p.length > 0);
  return parts.length > 0 ? parts.join("; ") : "none (no deny list, builder code or rate limit)";
}

/** Between the door shutting and the late answers: time for the refused settles to answer. */
const DOOR_GRACE_MS = 300;
/** Kept back from the timeout for the store's last writes and the process's end. */
const RESERVE_MS = 1_500;

/** Resolves with `work`, or after `ms` without it (it goes on, unwaited). */
function within(work: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms));
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
