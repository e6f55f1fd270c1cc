/**
 * Reading a hook's stdin within bounds. An agent writes one JSON event and
 * closes the pipe; a pipe that stays open must not hang the hook (the agent
 * would wait for it, and its tool call with it). The read ends at the end of
 * the input, or as soon as what arrived is one whole JSON object; it fails
 * when nothing more arrives for `idleMs` after the last byte (or the start),
 * or when it takes more than `totalMs` in all. The caller then fails closed.
 *
 * Uses only Node built-ins and Bun's stdin: the fast path of `noema hook`
 * reads stdin before anything else is loaded.
 *
 * @module
 */
import { fstatSync, readFileSync } from "node:fs";
import process from "node:process";

/** Bounds of {@link readHookStdin}. */
export interface StdinBounds {
  /** Fail when no byte came for this long. @default {NOEMA_HOOK_STDIN_IDLE_MS or 3000} */
  idleMs?: number;
  /** Fail when the input is not complete after this long. @default {NOEMA_HOOK_STDIN_MAX_MS or 20000} */
  totalMs?: number;
}

function envMs(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

/** Whether `text` is already one whole JSON object (the agent may keep the pipe open after it). */
function complete(text: string): boolean {
  const t = text.trimEnd();
  if (!t.endsWith("}")) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}

type Source = (push: (chunk: Uint8Array) => void, end: () => void, fail: (e: Error) => void) => () => void;

/** Bun's stdin stream (cheap to start), else `process.stdin`'s events; returns how to stop reading. */
function stdinSource(): Source {
  const bun = (globalThis as { Bun?: { stdin: { stream(): ReadableStream<Uint8Array> } } }).Bun;
  if (bun) {
    return (push, end, fail) => {
      const reader = bun.stdin.stream().getReader();
      (async () => {
        for (;;) {
          const r = await reader.read();
          if (r.done) return end();
          push(r.value);
        }
      })().catch(fail);
      return () => void reader.cancel().catch(() => {});
    };
  }
  return (push, end, fail) => {
    const stdin = process.stdin;
    stdin.on("data", push);
    stdin.once("end", end);
    stdin.once("error", fail);
    return () => {
      stdin.off("data", push);
      stdin.pause();
      (stdin as { unref?: () => void }).unref?.();
    };
  };
}

/**
 * All of stdin as text, within bounds; rejects with an Error whose message
 * starts with `stdin:` when the input is unreadable or does not end in time.
 *
 * @example
 * ```ts
 * import { readHookStdin } from "./hook_stdin.ts";
 * const text = await readHookStdin({ idleMs: 3000, totalMs: 20_000 });
 * ```
 */
export function readHookStdin(bounds: StdinBounds = {}): Promise<string> {
  const idleMs = bounds.idleMs ?? envMs("NOEMA_HOOK_STDIN_IDLE_MS", 3000);
  const totalMs = bounds.totalMs ?? envMs("NOEMA_HOOK_STDIN_MAX_MS", 20_000);
  try {
    // A file (or /dev/null) ends by itself: read it at once.
    const st = fstatSync(0);
    if (st.isFile() || st.isCharacterDevice()) return Promise.resolve(readFileSync(0, "utf8"));
  } catch (e) {
    return Promise.reject(new Error(`stdin: cannot read: ${(e as Error).message}`));
  }
  return new Promise((resolve, reject) => {
    const decoder = new TextDecoder();
    let text = "";
    let settled = false;
    let idle: ReturnType<typeof setTimeout> | undefined;
    const finish = (error: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(idle);
      clearTimeout(total);
      stop();
      if (error) reject(error);
      else resolve(text);
    };
    const armIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(
        () => finish(new Error(`stdin: no input for ${idleMs} ms and not closed (NOEMA_HOOK_STDIN_IDLE_MS)`)),
        idleMs,
      );
    };
    const total = setTimeout(
      () => finish(new Error(`stdin: not complete after ${totalMs} ms (NOEMA_HOOK_STDIN_MAX_MS)`)),
      totalMs,
    );
    const stop = stdinSource()(
      (chunk) => {
        text += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
        if (complete(text)) return finish(null);
        armIdle();
      },
      () => {
        text += decoder.decode();
        finish(null);
      },
      (e) => finish(new Error(`stdin: cannot read: ${e.message}`)),
    );
    armIdle();
  });
}
