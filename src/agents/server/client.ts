/**
 * The fast path of `noema hook`: before the CLI is even loaded, hand the
 * event to the session's resident hook server (see `./server.ts`) and print
 * its answer. When no server answers, the caller handles the event itself
 * (and starts a server for the next calls).
 *
 * @module
 */
import { existsSync } from "node:fs";
import process from "node:process";
import type { HookAnswer } from "../event.ts";
import { hookScope, serverEnabled, socketPath } from "./address.ts";
import { readHookStdin } from "../hook_stdin.ts";

/** The stdin text a client read before falling back (stdin can be read once). */
export let prereadStdin: string | null = null;

/** True when the client found no server listening for this call (the in-process path then starts one). */
export let serverAbsent = false;

/** What travels to the server: the hook's command line and its stdin. */
export interface HookRequest {
  v: 1;
  argv: string[];
  stdin: string;
}

/**
 * How long a client waits for the server's answer. @default {60000} (Claude
 * Code's own hook timeout), and longer than the hook's `--wait` for a
 * decision (`argv`: the hook's command line).
 */
export function replyTimeoutMs(argv: readonly string[] = []): number {
  const n = Number(process.env.NOEMA_HOOK_SERVER_TIMEOUT_MS);
  const base = Number.isFinite(n) && n > 0 ? n : 60_000;
  const wait = waitMsOf(argv);
  // The agent kills a hook at its own timeout (install-hooks --wait registers wait + HOOK_WAIT_MARGIN_S) and then
  // RUNS the call: answer exit 2 well before that. The agent's clock started when it spawned this process, so the
  // time this process already spent (start-up, stdin) is taken off.
  const budget = wait === null ? base - 10_000 : Math.max(base - 10_000, wait + 30_000 - 10_000);
  return Math.max(1_000, Math.round(budget - performance.now()));
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** The `--wait <duration>` a hook command line carries, in ms, or null (the CLI reports a bad one). */
function waitMsOf(argv: readonly string[]): number | null {
  const i = argv.lastIndexOf("--wait");
  const value = i >= 0 ? argv[i + 1] : argv.findLast((a) => a.startsWith("--wait="))?.slice(7);
  const m = value === undefined ? null : /^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$/i.exec(value);
  return m ? Number(m[1]) * UNIT_MS[m[2].toLowerCase()] : null;
}

/**
 * Sends one request; resolves with the answer, or null when nobody listens
 * or the connection closed before an answer (the caller falls back: a
 * proposal is idempotent per call id). Rejects when the server took longer
 * than `timeoutMs` (the call must then be blocked, not repeated).
 *
 * @example
 * ```ts
 * import { ask } from "./client.ts";
 * const answer = await ask("/tmp/noema-hooks-1000/x.sock", { v: 1, argv: ["hook", "codex"], stdin: "{}" });
 * console.log(answer); // null: no server there
 * ```
 */
export function ask(
  path: string,
  request: HookRequest,
  timeoutMs = replyTimeoutMs(request.argv),
): Promise<HookAnswer | null> {
  const bun = (globalThis as { Bun?: { connect(options: unknown): Promise<BunSocket> } }).Bun;
  if (!bun) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    let text = "";
    let settled = false;
    let socket: BunSocket | undefined;
    const done = (value: HookAnswer | null, error?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket?.end();
      if (error) reject(error);
      else resolve(value);
    };
    const timer = setTimeout(
      () =>
        done(null, new Error(`the hook server did not answer within ${timeoutMs} ms (NOEMA_HOOK_SERVER_TIMEOUT_MS)`)),
      timeoutMs,
    );
    // Bun's own socket: importing node:net would cost the hook call several milliseconds.
    const decoder = new TextDecoder();
    // A big call (a Write with a large file) may not fit the socket's buffer at once: the rest goes on drain.
    let pending = new TextEncoder().encode(`${JSON.stringify(request)}\n`);
    const flush = (s: BunSocket) => {
      if (pending.length > 0) pending = pending.subarray(Math.max(0, s.write(pending)));
    };
    bun.connect({
      unix: path,
      socket: {
        open: flush,
        drain: flush,
        data(_s: BunSocket, chunk: Uint8Array) {
          text += decoder.decode(chunk, { stream: true });
          const nl = text.indexOf("\n");
          if (nl < 0) return;
          try {
            done(JSON.parse(text.slice(0, nl)) as HookAnswer);
          } catch {
            done(null);
          }
        },
        close: () => done(null),
        error: () => done(null),
      },
    }).then((s) => {
      socket = s;
      if (settled) s.end();
    }, () => done(null));
  });
}

/** The part of Bun's socket the client uses. */
interface BunSocket {
  write(data: Uint8Array): number;
  end(): void;
}

/** Milliseconds this call already spent with a server that died before answering it (0: none): its own wait is shorter. */
let spentMs = 0;

/**
 * How long this hook call already waited on a resident server that died before answering (0 when it did not): a
 * `--wait` answered in the call's own process then waits only what is left, within the agent's own hook timeout.
 *
 * @example
 * ```ts
 * import { serverTimeSpentMs } from "./client.ts";
 * const left = Math.max(0, waitMs - serverTimeSpentMs());
 * ```
 */
export function serverTimeSpentMs(): number {
  return spentMs;
}

/**
 * `noema hook …` through a resident server: reads stdin, asks the server
 * for this scope; returns the exit code after printing its answer, or null
 * to handle the call in this process (stdin kept in {@link prereadStdin}).
 *
 * @example
 * ```ts
 * import { hookViaServer } from "./client.ts";
 * // in bin/noema.ts: const code = await hookViaServer(process.argv.slice(2)); if (code !== null) process.exit(code);
 * ```
 */
export async function hookViaServer(argv: string[]): Promise<number | null> {
  const started = performance.now();
  if (!serverEnabled() || argv.includes("--help") || argv.includes("-h")) return null;
  // Within bounds: a pipe that never closes must not hang the agent (the call is then blocked).
  let stdin: string;
  try {
    stdin = await readHookStdin();
  } catch (e) {
    process.stderr.write(`noema: ${(e as Error).message} (the call is blocked)\n`);
    return 2;
  }
  prereadStdin = stdin;
  let event: unknown;
  try {
    event = JSON.parse(stdin);
  } catch {
    return null; // the full path reports bad input
  }
  const scope = hookScope(argv, event);
  const path = scope === null ? null : socketPath(argv, scope);
  if (path === null) return null;
  let answer: HookAnswer | null;
  try {
    if (!existsSync(path)) {
      serverAbsent = true;
      return null;
    }
    answer = await ask(path, { v: 1, argv, stdin });
  } catch (e) {
    process.stderr.write(`noema hook: ${(e as Error).message} (the call is blocked)\n`);
    return 2;
  }
  if (answer === null) {
    serverAbsent = true; // nobody listens on the socket (a server that died): the caller starts another
    spentMs = performance.now() - started;
    return null;
  }
  if (answer.stdout !== null) process.stdout.write(`${answer.stdout}\n`);
  if (answer.stderr) process.stderr.write(`${answer.stderr}\n`);
  return answer.exitCode === 2 ? 2 : 0;
}
