/**
 * Running a child process for an adapter: timeout, abort, environment
 * allow-list, and bounded excerpts of its output.
 *
 * A child never gets noema's own secrets (`NOEMA_SIGNING_KEY`…) in its
 * environment, whatever environment it is given ({@link childEnv}). Output
 * excerpts are masked before they are cut: the tail kept is longer than the
 * excerpt by a margin wider than any secret, masked whole, then cut, so no
 * piece of a secret survives at the edge.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Buffer } from "node:buffer";
import { accessSync, constants, fstatSync, statSync } from "node:fs";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import process from "node:process";
import type { Duplex } from "node:stream";
import { nodeTty } from "../builtins.ts";
import { activeRedactor, isNoemaSecret, MASK, type Redactor } from "../runtime/redact.ts";
import type { ActResult } from "./api.ts";

/** Bytes kept before an excerpt's edge so a secret cut there is seen whole by the masker. */
const MASK_MARGIN = 64 * 1024;

/** Options of {@link childEnv}. */
export interface ChildEnvOptions {
  /**
   * The child is noema itself, doing the work of the process that starts it
   * (a resident hook server, which seals episodes and signs their
   * manifests): it keeps noema's secrets. Its environment is its parent
   * hook's, which is the agent's own. @default {false}
   */
  noema?: boolean;
}

/**
 * The environment of every child noema starts — adapters' processes
 * (`shell`, `command`, the `llm` agent's shell tool), verification
 * commands, policy workers, Claude Code, MCP servers — built from `env`
 * without noema's secrets, so no agent or command can read them:
 * - `NOEMA_SIGNING_KEY`, and any `NOEMA_*` variable whose name says key,
 *   secret, token (`NOEMA_SERVE_TOKEN`), password or credential
 *   ({@link isNoemaSecret});
 * - any `NOEMA_*` variable whose value carries a URL with a password
 *   (`NOEMA_STORE=postgres://user:pass@host/db`), or a query parameter
 *   named like a secret (`?sslpassword=…`): dropped whole;
 * - any variable, whatever its name, holding the value of one of those
 *   (a copy of the signing key under another name).
 *
 * Secrets the user names in `secrets` are masked in artifacts but still
 * passed: the programs the user runs act with them.
 *
 * @example
 * ```ts
 * import { childEnv } from "noema";
 * childEnv({ PATH: "/bin", NOEMA_SIGNING_KEY: "k" }); // { PATH: "/bin" }
 * ```
 */
export function childEnv(
  env: Record<string, string | undefined> = process.env,
  options: ChildEnvOptions = {},
): Record<string, string> {
  const out: Record<string, string> = {};
  if (options.noema) {
    for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
    return out;
  }
  const secret = (k: string, v: string) =>
    isNoemaSecret(k) || (/^NOEMA_/i.test(k) && (URL_PASSWORD.test(v) || URL_SECRET_PARAM.test(v)));
  const values = new Set<string>();
  for (const source of [process.env, env]) {
    for (const [k, v] of Object.entries(source)) if (v !== undefined && v.length >= 8 && secret(k, v)) values.add(v);
  }
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && !secret(k, v) && !values.has(v)) out[k] = v;
  }
  return out;
}

/** A URL with a password in it: `scheme://user:password@`. */
const URL_PASSWORD = /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/\s:@]*:[^/\s@]+@/;

/** A URL with a query parameter named like a secret that has a value (`?sslpassword=…`, `&token=…`). */
const URL_SECRET_PARAM =
  /[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s?#]*\?(?:[^\s#]*&)?[^\s=&#]*(?:pass|secret|token|key)[^\s=&#]*=[^\s&#]/i;

/** Options of {@link runProcess}. */
export interface RunProcessOptions {
  /** Program and arguments (no shell). Give this or `shell`. */
  argv?: readonly string[];
  /** A command line run by `/bin/sh -c`. */
  shell?: string;
  /** Working directory. @default {the current directory} */
  cwd?: string;
  /**
   * The whole environment of the child; noema's own secrets are always
   * removed from it ({@link childEnv}). @default {the parent's environment}
   */
  env?: Record<string, string>;
  /** Kill the child (SIGTERM, then SIGKILL after 2 s) after this long. @default {60000} */
  timeoutMs?: number;
  /** Kill the child when aborted. */
  signal?: AbortSignal;
  /** Bytes of the end of stdout and of stderr kept. @default {4096} */
  excerptBytes?: number;
  /** Text written to the child's stdin, which is then closed. @default {none: stdin is empty} */
  input?: string;
  /**
   * `inherit`: the child reads this process's own stdin (a terminal, a pipe
   * or a file), as if the user ran it directly; ignored when `input` is
   * given. When that stdin is a terminal the child also stays in this
   * process's group, so it can use the terminal (job control, Ctrl-C) like a
   * foreground program; a timeout or abort then signals the child only, not
   * its own children. `empty`: the child's stdin is empty (/dev/null).
   * @default {"empty"}
   */
  stdin?: "empty" | "inherit";
  /** Also copy the child's output to this process's stderr as it arrives. @default {false} */
  tee?: boolean;
  /**
   * Masks the excerpts (applied to the kept tail before it is cut).
   * @default {the redactors of the episodes open in this process (`activeRedactor()`)}
   */
  redactor?: Redactor;
  /**
   * Called once the child exists and before its program runs (the program
   * waits for it; a throw stops the child before it ran), e.g. to record its
   * process group durably. The child never outlives this process unattended
   * (see {@link runProcess}).
   */
  onSpawn?: (child: SpawnedChild) => void | Promise<void>;
}

/** The child of {@link runProcess} as {@link RunProcessOptions.onSpawn} sees it. */
export interface SpawnedChild {
  /** Its process id (the program's, once it runs). */
  pid: number;
  /** Its own process group (the same number), or null when it shares this process's group (a terminal program). */
  pgid: number | null;
}

/**
 * The supervisor every child starts as (POSIX sh, the program's arguments
 * after the mode): it waits for `go` on fd 3, then starts a watcher (a
 * grandchild, so the program never sees it among its children) and execs
 * the program (same pid, same process group). The watcher reads fd 3
 * until noema writes `done`; end of file without it means noema died, and
 * the watcher stops the program's group (`group` mode) or the program alone
 * (`pid` mode, a terminal program in noema's group): SIGTERM, then SIGKILL
 * 2 s later. Its own SIGTERM is ignored only then, so noema's own stop
 * (timeout, abort) still ends it.
 */
const SUPERVISOR = `IFS= read -r go <&3 || exit 125
[ "$go" = go ] || exit 125
mode=$1; shift
if [ "$mode" = group ]; then target="-$$"; else target="$$"; fi
( (
  exec </dev/null >/dev/null 2>&1
  while IFS= read -r line <&3; do [ "$line" = done ] && exit 0; done
  trap '' TERM
  kill -s TERM -- $target
  sleep 2
  kill -s KILL -- $target
) & )
exec "$@" 3<&-`;

/** Whether `program` resolves to an executable file (through `PATH` when it has no slash). */
function findsProgram(program: string, path: string | undefined, cwd: string | undefined): boolean {
  const executable = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (program.includes("/")) return executable(isAbsolute(program) ? program : resolve(cwd ?? ".", program));
  return (path ?? "").split(delimiter).some((d) => d !== "" && executable(join(resolve(cwd ?? ".", d), program)));
}

/** Whether children run under the {@link SUPERVISOR} here: POSIX with /bin/sh. */
function canSupervise(): boolean {
  if (process.platform === "win32") return false;
  try {
    accessSync("/bin/sh", constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Lets a supervised child run: calls `onSpawn`, then writes `go` on its fd 3,
 * and `done` once it exited (see {@link SUPERVISOR}). `error` is set when
 * `onSpawn` threw (the program then never runs).
 */
function openGate(
  child: ChildProcess,
  ownGroup: boolean,
  onSpawn: RunProcessOptions["onSpawn"],
): { error?: string } {
  const gate = child.stdio[3] as Duplex;
  const pid = child.pid!;
  const state: { error?: string } = {};
  let exited = false;
  gate.on("error", () => {}); // the supervisor may be gone already
  child.once("exit", () => {
    exited = true;
    gate.end("done\n");
  });
  (async () => {
    try {
      await onSpawn?.({ pid, pgid: ownGroup ? pid : null });
      if (!exited) gate.write("go\n");
    } catch (e) {
      state.error = `the program was not started: ${(e as Error).message}`;
      if (!exited) gate.end(); // end of file before "go": the supervisor exits without running it
    }
  })();
  return state;
}

/** What {@link runProcess} reports. */
export interface ProcessResult {
  /** Exit code, or null when killed by a signal. */
  exit_code: number | null;
  /** The signal that ended it, if any. */
  signal: string | null;
  /** True when the timeout killed it. */
  timed_out: boolean;
  /** True when the abort signal killed it. */
  aborted: boolean;
  /** Wall time in milliseconds. */
  duration_ms: number;
  /** The last `excerptBytes` of stdout (UTF-8, may start mid-line), secrets masked. */
  stdout: string;
  /** The last `excerptBytes` of stderr. */
  stderr: string;
  /** Total stdout bytes. */
  stdout_bytes: number;
  /** Total stderr bytes. */
  stderr_bytes: number;
  /** Set when the program could not be started (e.g. not found). */
  spawn_error?: string;
}

/** The end of a stream: `limit` bytes plus a margin, so the excerpt can be masked before it is cut. */
class Tail {
  chunks: Uint8Array[] = [];
  kept = 0;
  total = 0;
  readonly keep: number;
  constructor(readonly limit: number, margin: number) {
    this.keep = limit + margin;
  }
  push(chunk: Uint8Array): void {
    this.total += chunk.length;
    this.chunks.push(chunk);
    this.kept += chunk.length;
    while (this.chunks.length > 1 && this.kept - this.chunks[0].length >= this.keep) {
      this.kept -= this.chunks.shift()!.length;
    }
  }
  /**
   * The last `limit` bytes, secrets masked. The cut is chosen on the wider
   * tail: a secret that crosses it is masked whole (the excerpt starts with
   * the mask), never cut into a visible piece.
   */
  text(redactor: Redactor): string {
    const wide = new TextDecoder().decode(Buffer.concat(this.chunks, this.kept));
    if (this.total <= this.limit) return redactor.redactString(wide);
    let start = cutFor(wide, this.limit);
    let prefix = "";
    const spans = redactor.spans(wide);
    for (let moved = true; moved;) {
      moved = false;
      for (const [s, e] of spans) {
        if (s < start && e > start) [start, prefix, moved] = [e, MASK, true];
      }
    }
    return prefix + redactor.redactString(wide.slice(start));
  }
}

/** The index in `text` where its last `limit` UTF-8 bytes start (on a code point boundary). */
function cutFor(text: string, limit: number): number {
  let bytes = 0, start = text.length;
  while (start > 0) {
    const c = text.charCodeAt(start - 1);
    const pair = c >= 0xdc00 && c <= 0xdfff && start > 1 && (text.charCodeAt(start - 2) & 0xfc00) === 0xd800;
    const n = pair ? 4 : c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
    if (bytes + n > limit) break;
    bytes += n;
    start -= pair ? 2 : 1;
  }
  return start;
}

/**
 * What this process's stdin is: a terminal, a pipe (or socket), a regular
 * file, or `none` (/dev/null, another device, or closed).
 *
 * @example
 * ```ts
 * import { stdinKind } from "noema";
 * stdinKind(); // "tty" in a terminal, "pipe" under `echo hi | …`, "none" under `… < /dev/null`
 * ```
 */
export function stdinKind(): "tty" | "pipe" | "file" | "none" {
  try {
    if (nodeTty().isatty(0)) return "tty";
    const st = fstatSync(0);
    return st.isFIFO() || st.isSocket() ? "pipe" : st.isFile() ? "file" : "none";
  } catch {
    return "none";
  }
}

/**
 * Picks variables from an environment by name (an allow-list).
 *
 * @example
 * ```ts
 * import { pickEnv } from "noema";
 * pickEnv(["PATH", "HOME"]); // { PATH: "...", HOME: "..." }
 * ```
 */
export function pickEnv(
  names: readonly string[],
  from: Record<string, string | undefined> = process.env,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) if (from[n] !== undefined) out[n] = from[n]!;
  return out;
}

/**
 * Runs a process to completion. Never throws for a failing program: the
 * result says how it ended. On POSIX the child starts under a small
 * `/bin/sh` supervisor (see `SUPERVISOR` in this module), in its own process
 * group unless it reads the terminal: if this process dies, even by
 * SIGKILL, the supervisor stops the group (SIGTERM, then SIGKILL 2 s later),
 * so the program never outlives noema unattended. `onSpawn` runs before the
 * program starts.
 *
 * @example
 * ```ts
 * import { runProcess } from "noema";
 * const r = await runProcess({ shell: "echo hi", timeoutMs: 5000 });
 * console.log(r.exit_code, r.stdout); // 0 "hi\n"
 * ```
 */
export function runProcess(options: RunProcessOptions): Promise<ProcessResult> {
  const started = performance.now();
  const excerpt = options.excerptBytes ?? 4096;
  const argv = options.shell !== undefined ? ["/bin/sh", "-c", options.shell] : [...(options.argv ?? [])];
  if (argv.length === 0) throw new TypeError("runProcess: give argv or shell");
  const redactor = options.redactor ?? activeRedactor();
  const margin = Math.max(MASK_MARGIN, 2 * redactor.longest);
  const out = new Tail(excerpt, margin), err = new Tail(excerpt, margin);
  return new Promise((resolve) => {
    let timedOut = false, aborted = false, settled = false;
    const inherit = options.stdin === "inherit" && options.input === undefined;
    // A child reading the terminal stays in our process group (a foreground program); any other gets its own.
    const ownGroup = process.platform !== "win32" && !(inherit && nodeTty().isatty(0));
    const env = childEnv(options.env ?? process.env);
    // A program that cannot be found is spawned directly, so it fails as it always did (a spawn error).
    const supervised = canSupervise() && findsProgram(argv[0], env.PATH, options.cwd);
    const stdin = options.input !== undefined ? "pipe" : inherit ? "inherit" : "ignore";
    const child = spawn(
      supervised ? "/bin/sh" : argv[0],
      supervised ? ["-c", SUPERVISOR, "noema-supervisor", ownGroup ? "group" : "pid", ...argv] : argv.slice(1),
      {
        cwd: options.cwd,
        env,
        stdio: supervised ? [stdin, "pipe", "pipe", "pipe"] : [stdin, "pipe", "pipe"],
        detached: ownGroup,
      },
    );
    const gate = supervised && child.pid !== undefined ? openGate(child, ownGroup, options.onSpawn) : null;
    const kill = (sig: NodeJS.Signals) => {
      try {
        // Kill the whole process group so a shell's children go too.
        if (child.pid !== undefined && ownGroup) process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        // already gone
      }
    };
    let hardKill: ReturnType<typeof setTimeout> | undefined;
    const stop = () => {
      kill("SIGTERM");
      hardKill = setTimeout(() => kill("SIGKILL"), 2000);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs ?? 60_000);
    const onAbort = () => {
      aborted = true;
      stop();
    };
    if (options.signal?.aborted) onAbort();
    options.signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout!.on("data", (c: Uint8Array) => {
      out.push(c);
      if (options.tee) process.stderr.write(c);
    });
    child.stderr!.on("data", (c: Uint8Array) => {
      err.push(c);
      if (options.tee) process.stderr.write(c);
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
    let drain: ReturnType<typeof setTimeout> | undefined;
    const finish = (code: number | null, signal: string | null, spawnError?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (drain) clearTimeout(drain);
      if (hardKill) clearTimeout(hardKill);
      options.signal?.removeEventListener("abort", onAbort);
      const result: ProcessResult = {
        exit_code: code,
        signal,
        timed_out: timedOut,
        aborted,
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        stdout: out.text(redactor),
        stderr: err.text(redactor),
        stdout_bytes: out.total,
        stderr_bytes: err.total,
      };
      if (spawnError !== undefined || gate?.error !== undefined) result.spawn_error = spawnError ?? gate?.error;
      resolve(result);
    };
    child.on("error", (e) => finish(null, null, e.message));
    child.on("close", (code, signal) => finish(code, signal));
    // The program ended. A process it left behind (`setsid daemon &`: out of its group, so no timeout or signal of
    // ours reaches it) may hold its output pipes open for ever, and "close" would never come: what they hold within
    // a moment is kept, then they are let go (found by a break-it run: such a run never ended, even on SIGTERM).
    child.once("exit", (code, signal) => {
      drain = setTimeout(() => {
        for (const stream of [child.stdout, child.stderr, child.stdin, child.stdio[3]]) {
          (stream as { destroy?(): void } | null)?.destroy?.();
        }
        finish(code, signal);
      }, OUTPUT_DRAIN_MS);
    });
  });
}

/**
 * How long a finished program's output pipes may stay open (held by a process it left behind) before the result is
 * taken without them.
 */
const OUTPUT_DRAIN_MS = 5_000;

/**
 * An adapter's result for a finished process: `ok` on exit 0, else `error`
 * with the reason (could not start, timed out, interrupted, killed, exit
 * code), its message prefixed by `label` when given. `output` holds the exit
 * code, signal, duration and output excerpts, plus `extra`; `exit_code` is
 * the program's exit code (null when it was killed or could not start).
 *
 * @example
 * ```ts
 * import { processActResult, runProcess } from "noema";
 * const r = await runProcess({ argv: ["make", "test"], timeoutMs: 60_000 });
 * return processActResult(r, { label: "make", timeoutMs: 60_000 });
 * ```
 */
export function processActResult(
  r: ProcessResult,
  options: { label?: string; timeoutMs: number; extra?: Record<string, unknown> },
): ActResult {
  const output = {
    ...(options.extra ?? {}),
    exit_code: r.exit_code,
    signal: r.signal,
    duration_ms: r.duration_ms,
    stdout: r.stdout,
    stderr: r.stderr,
    stdout_bytes: r.stdout_bytes,
    stderr_bytes: r.stderr_bytes,
  };
  const fail = (outcome: string, type: string, message: string): ActResult => ({
    status: "error",
    outcome,
    output,
    error: { type, message },
    exit_code: r.exit_code,
  });
  const who = options.label === undefined ? "" : `${options.label}: `;
  if (r.spawn_error !== undefined) return fail("could not start", "SpawnError", `${who}${r.spawn_error}`);
  if (r.timed_out) {
    return fail(`timed out after ${options.timeoutMs} ms`, "Timeout", `${who}timed out after ${options.timeoutMs} ms`);
  }
  if (r.aborted) return fail("aborted", "Aborted", "the run was interrupted");
  if (r.exit_code !== 0) {
    const why = r.exit_code === null ? `killed by ${r.signal}` : `exit code ${r.exit_code}`;
    return fail(r.exit_code === null ? why : `exit ${r.exit_code}`, "CommandFailed", `${who}${why}`);
  }
  return { status: "ok", outcome: "exit 0", output, exit_code: r.exit_code };
}
