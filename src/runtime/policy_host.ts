/**
 * Policy isolation, main-thread side: policy files run in a worker thread
 * (`node:worker_threads`, under Bun and Deno alike), one worker per policy
 * file, so that a policy whose `advise` never returns — even a synchronous
 * `while (true) {}` — is stopped at the policy timeout: the worker is
 * terminated and started again, with the policy reloaded, on the next call.
 *
 * Cost per call: one message each way, as JSON text (posting a string costs
 * a fraction of a structured clone of the same data, under Bun and Deno
 * alike; the state is plain JSON anyway), plus copying the parts of the state
 * that changed since the previous call (the state is sent per top-level key;
 * a key whose value is the same object as last time is sent as `same`, and
 * the big lists — `plan.steps`, `outcomes.actions`, `memory.facts` — are sent
 * as deltas: only entries appended or changed since the previous call cross).
 * See `bench/policy.ts` for the numbers.
 *
 * Workers are `unref`'d while idle: they never keep a process alive.
 *
 * @module
 */
import type { Worker } from "node:worker_threads";
import process from "node:process";
import { resolve } from "node:path";
import { EXIT, type ExitCode, NoemaError } from "../errors.ts";
import { type LoadedPolicy, pluginLoadTimeoutMs } from "../plugins/loader.ts";
import type { PolicyState, ReviewState } from "../plugins/api.ts";
import { OutputBudget } from "../plugins/plugin_output.ts";
import type { FromWorker, StatePart, ToWorker } from "./policy_worker.ts";
import { childEnv } from "../plugins/process.ts";
import { LIST_FIELDS } from "./core/snapshot.ts";
import { viewSource } from "./core/list_view.ts";
import { arraySnapshot, listDelta, type ListSnapshot } from "./core/shared_list.ts";
import { nodeWorkerThreads } from "../builtins.ts";

/**
 * The memory cap of a policy worker in MiB (`NOEMA_POLICY_MEMORY_MB`, default 512): the worker's
 * `resourceLimits.maxOldGenerationSizeMb`, and the most the process's resident memory may grow during
 * one load or call before the worker is terminated (the watchdog that also holds where `resourceLimits`
 * is ignored, as under Bun).
 */
export function policyMemoryMb(): number {
  const n = Number(process.env.NOEMA_POLICY_MEMORY_MB);
  return Number.isFinite(n) && n >= 16 ? Math.floor(n) : 512;
}

/** How often the memory watchdog samples the process's resident memory. */
const WATCHDOG_MS = 20;

/**
 * How old a resident-memory sample may be and still serve as the baseline of a new call: reading the
 * resident memory costs tens of µs under Bun, more than a whole short call, so back-to-back calls share one
 * sample (the process's own growth in this window counts against the policy: a cap tighter by that much).
 */
const BASELINE_MAX_AGE_MS = 250;

/** An error a worker call failed with, rebuilt in this thread with the same name (and `at`, where it was thrown). */
function rebuild(name: string, message: string, at?: string): Error {
  const e = name === "TypeError"
    ? new TypeError(message)
    : name === "RangeError"
    ? new RangeError(message)
    : new Error(message);
  e.name = name;
  if (at) (e as Error & { at?: string }).at = at;
  return e;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

class WorkerLost extends Error {
  constructor(message: string, name = "PolicyWorkerLost") {
    super(message);
    this.name = name;
  }
}

function memoryLimitError(mb: number): WorkerLost {
  return new WorkerLost(
    `the policy worker exceeded its memory cap of ${mb} MiB and was terminated (NOEMA_POLICY_MEMORY_MB)`,
    "PolicyMemoryLimit",
  );
}

/** One worker hosting the policies loaded from one file (same path, same content). */
class PolicyWorkerHost {
  readonly path: string;
  private worker: Worker | null = null;
  private started: Promise<boolean> | null = null;
  private readonly calls = new Map<number, Pending>();
  private readonly loads = new Map<number, Pending>();
  private readonly handles = new Set<number>();
  /** What was sent last per top-level key (and its big list), to send only what changed. */
  private readonly sent = new Map<string, { value: unknown; list?: ListSnapshot<unknown> }>();
  private nextCall = 1;
  private busy = 0;
  private watchdog: ReturnType<typeof setInterval> | null = null;
  /** Resident memory when the current load or call started (or the worker became ready), bytes. */
  private watchBase: number | null = null;
  /** When {@link watchBase} was sampled (`performance.now()`). */
  private watchBaseAt = 0;
  /** Why the worker was last dropped (a memory-cap kill at load must not fall back to loading in-thread). */
  private lastLoss: Error | null = null;
  /** The output budget of the load or call in flight (what the policy prints goes to stderr). */
  private output: OutputBudget | null = null;
  /** Policy instances loading again in a restarted worker: settled when each is loaded (or failed to). */
  private reloading = new Map<number, Promise<void>>();
  /** Handles whose first load is in flight ({@link load} sends it; a start must not send it twice). */
  private firstLoads = new Set<number>();
  /** Set while no policy instance is left: when it fires, the worker is terminated. */
  private idle: ReturnType<typeof setTimeout> | null = null;

  readonly key: string;

  constructor(path: string, key: string) {
    this.path = path;
    this.key = key;
  }

  /** Starts the worker (and reloads every live policy after a restart). False when it cannot start. */
  private start(): Promise<boolean> {
    if (this.started) return this.started;
    this.sent.clear();
    this.watchBase = null;
    this.lastLoss = null;
    const mb = policyMemoryMb();
    // The worker's environment lacks noema's own secrets: its process.env and its children have no signing key (it is
    // a thread of this process, not a sandbox: /proc/self/environ stays readable, see docs/security.md).
    const { Worker } = nodeWorkerThreads();
    const worker = new Worker(new URL("./policy_worker.ts", import.meta.url), {
      env: childEnv(),
      resourceLimits: { maxOldGenerationSizeMb: mb, maxYoungGenerationSizeMb: Math.min(64, Math.ceil(mb / 4)) },
    });
    this.worker = worker;
    // Held (ref'd) only while a load or a call is in flight, so an idle worker never keeps the process alive.
    if (this.busy > 0) worker.ref();
    else worker.unref();
    this.started = new Promise<boolean>((ready) => {
      worker.on("message", (text: string) => {
        const m = JSON.parse(text) as FromWorker;
        if (m.type === "ready") {
          // Memory the process spent starting the worker (Deno may type-check it here) is not the policy's.
          this.sampleBase();
          ready(true);
        } else this.onMessage(m);
      });
      const lost = (why: string) => {
        ready(false);
        if (this.worker === worker) this.drop(new WorkerLost(why));
      };
      worker.on("error", (e: Error) => {
        if ((e as { code?: unknown })?.code === "ERR_WORKER_OUT_OF_MEMORY") {
          ready(false);
          if (this.worker === worker) this.drop(memoryLimitError(mb));
        } else lost(`the policy worker failed: ${e?.message ?? e}`);
      });
      worker.on("exit", (code: number) => lost(`the policy worker exited (code ${code})`));
    });
    for (const handle of this.handles) if (!this.firstLoads.has(handle)) this.reload(handle);
    return this.started;
  }

  /** Loads a policy instance again in a new worker; {@link prepare} waits for it. */
  private reload(handle: number): void {
    const done = new Promise<void>((resolve) => {
      const settle = () => {
        if (this.reloading.get(handle) === done) this.reloading.delete(handle);
        resolve();
      };
      // Its outcome is the next call's: a load error or a lost worker is reported there.
      this.loads.set(handle, { resolve: settle, reject: settle });
    });
    this.reloading.set(handle, done);
    this.post({ type: "load", handle, path: this.path });
  }

  /** Sends a message as JSON text; throws (nothing sent) when it cannot be serialized (a BigInt, a cycle). */
  private post(m: ToWorker): void {
    this.worker!.postMessage(JSON.stringify(m));
  }

  private hold(): void {
    this.output = null;
    if (this.busy++ === 0) {
      this.worker?.ref();
      this.startWatchdog();
    }
  }

  private release(): void {
    this.busy = Math.max(0, this.busy - 1);
    if (this.busy === 0) {
      this.worker?.unref();
      if (this.watchdog) clearInterval(this.watchdog);
      this.watchdog = null;
    }
  }

  private sampleBase(): void {
    this.watchBase = process.memoryUsage.rss();
    this.watchBaseAt = performance.now();
  }

  /** While a load or call is in flight: terminates the worker when the process grows past the memory cap. */
  private startWatchdog(): void {
    const mb = policyMemoryMb();
    if (this.watchBase === null || performance.now() - this.watchBaseAt > BASELINE_MAX_AGE_MS) this.sampleBase();
    this.watchdog = setInterval(() => {
      const rss = process.memoryUsage.rss();
      // Only once the worker is up: before that, the process (not the policy) is what grows.
      if (!this.worker || this.watchBase === null) return;
      if (rss - this.watchBase > mb * 1024 * 1024) this.drop(memoryLimitError(mb));
    }, WATCHDOG_MS);
    (this.watchdog as { unref?: () => void }).unref?.();
  }

  private onMessage(m: FromWorker): void {
    if (m.type === "output") {
      (this.output ??= new OutputBudget(m.label)).write(m.text);
    } else if (m.type === "loaded" || m.type === "load_error") {
      const p = this.loads.get(m.handle);
      if (!p) return;
      this.loads.delete(m.handle);
      if (m.type === "loaded") p.resolve(m);
      else p.reject(new NoemaError(m.code, m.message, { file: this.path, exitCode: m.exitCode as ExitCode }));
    } else if (m.type === "result" || m.type === "error") {
      const p = this.calls.get(m.call);
      if (!p) return;
      this.calls.delete(m.call);
      if (m.type === "result") p.resolve(m.value);
      else p.reject(rebuild(m.name, m.message, m.at));
    }
  }

  /** Forgets the worker and fails everything in flight. */
  private drop(error: Error): void {
    const worker = this.worker;
    this.lastLoss = error;
    this.worker = null;
    this.started = null;
    this.sent.clear();
    const pending = [...this.calls.values(), ...this.loads.values()];
    this.calls.clear();
    this.loads.clear();
    for (const p of pending) p.reject(error);
    if (worker) void worker.terminate();
  }

  /** Loads the file as a new policy instance; null when no worker can be started. */
  async load(
    handle: number,
    displayPath: string,
  ): Promise<{ id: string; name: string; version: string; review?: boolean } | null> {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    this.handles.add(handle);
    this.firstLoads.add(handle);
    this.hold();
    let ok: boolean;
    try {
      ok = await this.start();
    } catch {
      ok = false;
    }
    if (!ok) {
      this.handles.delete(handle);
      this.release();
      if (this.lastLoss?.name === "PolicyMemoryLimit") {
        throw new NoemaError("bad_plugin", `cannot load: ${this.lastLoss.message}`, {
          file: displayPath,
          exitCode: EXIT.USAGE,
        });
      }
      return null;
    }
    const ms = pluginLoadTimeoutMs();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await new Promise<{ id: string; name: string; version: string; review?: boolean }>((resolve, reject) => {
        this.loads.set(handle, { resolve: resolve as (v: unknown) => void, reject });
        timer = setTimeout(() => {
          // The usage error first (exit 2 naming the file), then the worker goes: its drop must not win.
          this.loads.delete(handle);
          reject(
            new NoemaError("bad_plugin", `did not finish loading within ${ms} ms (NOEMA_POLICY_LOAD_TIMEOUT_MS)`, {
              file: displayPath,
              exitCode: EXIT.USAGE,
            }),
          );
          this.drop(new WorkerLost("load timed out"));
        }, ms);
        this.post({ type: "load", handle, path: this.path });
      });
    } catch (e) {
      this.handles.delete(handle);
      if (e instanceof NoemaError && e.location.file === this.path) {
        // Name the file the way the user wrote it.
        throw new NoemaError(e.code, e.detail, { file: displayPath, exitCode: e.exitCode });
      }
      if (e instanceof WorkerLost) {
        // The worker died while loading (memory cap, process.exit at load…): a bad plugin, not an internal error.
        throw new NoemaError("bad_plugin", `cannot load: ${e.message}`, { file: displayPath, exitCode: EXIT.USAGE });
      }
      throw e;
    } finally {
      clearTimeout(timer);
      this.firstLoads.delete(handle);
      this.release();
    }
  }

  /**
   * Starts the worker when a timeout stopped it, and waits until `handle`'s
   * policy has loaded again there, within the load timeout: so a reload
   * (Deno may type-check the file) does not eat into the next call's own
   * timeout. Rejects (and stops the worker) when the reload takes longer.
   */
  async prepare(handle: number): Promise<void> {
    this.hold();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      if (!(await this.start().catch(() => false))) return; // the call reports that no worker starts
      const reload = this.reloading.get(handle);
      if (!reload) return;
      const ms = pluginLoadTimeoutMs();
      await Promise.race([
        reload,
        new Promise<void>((_, reject) => {
          timer = setTimeout(() => {
            this.drop(new WorkerLost("reload timed out"));
            reject(
              new NoemaError("bad_plugin", `did not load again within ${ms} ms (NOEMA_POLICY_LOAD_TIMEOUT_MS)`, {
                file: this.path,
              }),
            );
          }, ms);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.release();
    }
  }

  /** One `advise` call (or, with `method: "review"`, one `review` call: the state then carries `result`). */
  async advise(
    handle: number,
    state: PolicyState | ReviewState,
    method: "advise" | "review" = "advise",
  ): Promise<unknown> {
    this.hold();
    try {
      return await this.call(handle, state, method);
    } finally {
      this.release();
    }
  }

  /** Starts the worker unless it runs (for a caller that bounds only the calls after it). False when it cannot. */
  async ready(): Promise<boolean> {
    this.hold();
    try {
      return await this.start();
    } catch {
      return false;
    } finally {
      this.release();
    }
  }

  /** Applies a `redact` verdict's patterns to `value` in the worker (bounded like a call: timeout, memory cap). */
  async mask(value: unknown, patterns: readonly string[]): Promise<unknown> {
    this.hold();
    try {
      if (!(await this.start())) throw new WorkerLost("the policy worker cannot start");
      const call = this.nextCall++;
      return await new Promise<unknown>((resolve, reject) => {
        this.calls.set(call, { resolve, reject });
        try {
          this.post({ type: "mask", call, value, patterns: [...patterns] });
        } catch (e) {
          this.calls.delete(call);
          reject(e as Error);
        }
      });
    } finally {
      this.release();
    }
  }

  private async call(handle: number, state: PolicyState | ReviewState, method: "advise" | "review"): Promise<unknown> {
    if (!(await this.start())) throw new WorkerLost("the policy worker cannot start");
    const parts: Record<string, StatePart> = {};
    for (const [key, value] of Object.entries(state as Record<string, unknown>)) parts[key] = this.part(key, value);
    const call = this.nextCall++;
    return await new Promise<unknown>((resolve, reject) => {
      this.calls.set(call, { resolve, reject });
      try {
        this.post({ type: "advise", call, handle, parts, ...(method === "review" ? { method } : {}) });
      } catch (e) {
        // The state could not be serialized (a BigInt, a cycle…): nothing was sent.
        this.calls.delete(call);
        for (const key of Object.keys(parts)) this.sent.delete(key);
        reject(e as Error);
      }
    });
  }

  /** What to send for one top-level key of the state (see {@link StatePart}). */
  private part(key: string, value: unknown): StatePart {
    const reusable = typeof value === "object" && value !== null;
    const last = this.sent.get(key);
    if (!reusable) {
      this.sent.delete(key);
      return { same: false, value };
    }
    if (last && last.value === value) return { same: true };
    const field = LIST_FIELDS[key];
    const list = field ? (value as Record<string, unknown>)[field] : undefined;
    if (!field || !Array.isArray(list)) {
      this.sent.set(key, { value });
      return { same: false, value };
    }
    // The list as a delta against the one sent last time: entries compared by identity (the snapshot
    // keeps unchanged entries as the same frozen objects), so appending one action sends one entry.
    const now = viewSource(list) ?? arraySnapshot(list);
    const set = listDelta(last?.list ?? { chunks: [], length: 0 }, now);
    const shell: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    delete shell[field];
    this.sent.set(key, { value, list: now });
    return { same: false, value: shell, list: { field, length: now.length, set } };
  }

  /** Stops whatever is running: terminates the worker; the next call starts a new one. */
  abort(): void {
    this.drop(new WorkerLost("the policy worker was restarted after a call timed out"));
  }

  /**
   * Forgets one policy instance. When none is left, the worker is kept
   * (idle, never keeping the process alive) for {@link IDLE_KEEP_MS}, so the
   * next episode of this process that loads the same file gets a worker
   * whose code is already compiled; then it is terminated.
   */
  close(handle: number): void {
    if (!this.handles.delete(handle)) return;
    if (this.worker) this.post({ type: "release", handle });
    if (this.handles.size > 0) return;
    if (!this.worker) {
      hosts.delete(this.key);
      return;
    }
    this.idle = setTimeout(() => {
      this.idle = null;
      if (this.handles.size > 0) return;
      this.drop(new WorkerLost("the policy was closed"));
      hosts.delete(this.key);
    }, IDLE_KEEP_MS);
    (this.idle as { unref?: () => void }).unref?.();
  }
}

const hosts = new Map<string, PolicyWorkerHost>();

/** How long a worker with no policy instance left is kept for the next episode of this process, ms. */
const IDLE_KEEP_MS = 5000;
let nextHandle = 1;

/** The worker that runs the redaction patterns of policies in the caller's thread (loads no policy). */
let patternHost: PolicyWorkerHost | null = null;
let patternUsers = 0;
let patternIdle: ReturnType<typeof setTimeout> | null = null;

/** What {@link patternWorker} gives: `mask` in the worker, and `abort` to stop it (a call that timed out). */
export interface PatternWorker {
  mask(value: unknown, patterns: readonly string[]): Promise<unknown>;
  abort(): void;
}

/**
 * A worker of its own for the redaction patterns of a policy that runs in the caller's thread (a policy object,
 * `NOEMA_POLICY_ISOLATION=thread`), started (outside the caller's timeout) when it is not running: the patterns then
 * run under the policy timeout and memory cap like a policy file's. Null when no worker can start (the caller then
 * runs them in its thread). Idle for {@link IDLE_KEEP_MS}, it is terminated.
 *
 * @example
 * ```ts
 * import { patternWorker } from "./policy_host.ts";
 * const w = await patternWorker();
 * await w?.mask({ out: "key sk-abc" }, ["sk-\\w+"]); // { out: "key [REDACTED]" }
 * ```
 */
export async function patternWorker(): Promise<PatternWorker | null> {
  const host = patternHost ??= new PolicyWorkerHost("", "\0patterns");
  if (patternIdle) clearTimeout(patternIdle);
  patternIdle = null;
  if (!(await host.ready())) return null;
  return {
    mask: async (value, patterns) => {
      patternUsers++;
      try {
        return await host.mask(value, patterns);
      } finally {
        if (--patternUsers === 0) {
          if (patternIdle) clearTimeout(patternIdle);
          patternIdle = setTimeout(() => patternUsers === 0 && host.abort(), IDLE_KEEP_MS);
          (patternIdle as { unref?: () => void }).unref?.();
        }
      }
    },
    abort: () => host.abort(),
  };
}
const finalizer = new FinalizationRegistry<{ host: PolicyWorkerHost; handle: number }>(({ host, handle }) =>
  host.close(handle)
);

/**
 * Loads a policy file in a worker thread. Returns null when no worker can be
 * started (the caller then loads it in its own thread); throws the same
 * one-line plugin errors as loading in-thread.
 *
 * @example
 * ```ts
 * import { loadPolicyInWorker } from "./policy_host.ts";
 * const policy = await loadPolicyInWorker("plugins/policies/sql-guard.ts", null);
 * await policy?.advise(frozenState); // runs in the worker
 * policy?.close?.();
 * ```
 */
export async function loadPolicyInWorker(path: string, sha256: string | null): Promise<LoadedPolicy | null> {
  const abs = resolve(path);
  const key = `${abs}\0${sha256 ?? ""}`;
  let host = hosts.get(key);
  if (!host) {
    host = new PolicyWorkerHost(abs, key);
    hosts.set(key, host);
  }
  const handle = nextHandle++;
  const info = await host.load(handle, path);
  if (!info) {
    hosts.delete(key);
    return null;
  }
  const h = host;
  const policy: LoadedPolicy = {
    id: info.id,
    name: info.name,
    version: info.version,
    path: abs,
    sha256,
    isolation: "worker",
    advise: (state) => h.advise(handle, state),
    ...(info.review ? { review: (state: ReviewState) => h.advise(handle, state, "review") } : {}),
    mask: (value: unknown, patterns: readonly string[]) => h.mask(value, patterns),
    abort: () => h.abort(),
    prepare: () => h.prepare(handle),
    close: () => {
      finalizer.unregister(policy);
      h.close(handle);
    },
  };
  finalizer.register(policy, { host, handle }, policy);
  return policy;
}
