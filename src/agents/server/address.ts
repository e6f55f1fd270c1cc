/**
 * Where a hook server listens: a Unix socket in a directory only this user
 * can enter, named after everything that makes two hook calls the same
 * server's business — noema's version and executable, the working
 * directory, `NOEMA_ROOT`, the hook's command line and the scope (the `--episode` given, or the agent's session
 * id). Computed by the client before anything else is loaded, so it uses
 * only Node built-ins.
 *
 * @module
 */
import { existsSync, lstatSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { NOEMA_VERSION } from "../../version.ts";

/**
 * The private directory of this user's hook sockets (created 0700;
 * `NOEMA_HOOK_SERVER_DIR` chooses another: removing it stops its servers), or null
 * when it cannot be made safe (owned by someone else, a symlink, or open to
 * others): then no server is used.
 *
 * @example
 * ```ts
 * import { socketDir } from "./address.ts";
 * console.log(socketDir()); // "/run/user/1000/noema-hooks" or "/tmp/noema-hooks-1000"
 * ```
 */
export function socketDir(): string | null {
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  const runtime = process.env.XDG_RUNTIME_DIR;
  const dir = process.env.NOEMA_HOOK_SERVER_DIR ||
    (runtime ? join(runtime, "noema-hooks") : join(tmpdir(), `noema-hooks-${uid}`));
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return null;
    return dir;
  } catch {
    return null;
  }
}

/**
 * The socket of the hook server for one hook command line and scope, or
 * null without a safe directory (or outside Bun).
 *
 * @example
 * ```ts
 * import { socketPath } from "./address.ts";
 * socketPath(["hook", "claude-code", "--policy", "p.ts"], "session-1"); // ".../3f1c…e2.sock"
 * ```
 */
export function socketPath(argv: readonly string[], scope: string): string | null {
  const dir = socketDir();
  if (dir === null) return null;
  // The executable and version too: a server started by another noema (an upgrade, the binary vs. bun) is not asked.
  const key = JSON.stringify([
    NOEMA_VERSION,
    process.execPath,
    process.cwd(),
    process.env.NOEMA_ROOT ?? "",
    argv,
    scope,
  ]);
  // Bun's native hasher: importing node:crypto would cost the hook call several milliseconds (servers are Bun-only).
  const Hasher = (globalThis as { Bun?: { CryptoHasher?: new (a: string) => BunHasher } }).Bun?.CryptoHasher;
  if (!Hasher) return null;
  return join(dir, `${new Hasher("sha256").update(key).digest("hex").slice(0, 32)}.sock`);
}

interface BunHasher {
  update(data: string): BunHasher;
  digest(encoding: "hex"): string;
}

/**
 * The scope of a hook call: the `--episode` value on the command line, else
 * the event's `session_id`, else null (no server for it).
 *
 * @example
 * ```ts
 * import { hookScope } from "./address.ts";
 * hookScope(["hook", "codex"], { session_id: "s1" }); // "session:s1"
 * hookScope(["hook", "codex", "--episode", "ep_1"], {}); // "episode:ep_1"
 * ```
 */
export function hookScope(argv: readonly string[], event: unknown): string | null {
  const at = argv.findIndex((a) => a === "--episode" || a.startsWith("--episode="));
  if (at >= 0) {
    const value = argv[at].includes("=") ? argv[at].slice(argv[at].indexOf("=") + 1) : argv[at + 1];
    return value ? `episode:${value}` : null;
  }
  const session = (event as { session_id?: unknown } | null)?.session_id;
  return typeof session === "string" && session !== "" ? `session:${session}` : null;
}

/**
 * Whether hook calls may use a resident server: on unless
 * `NOEMA_HOOK_SERVER=0`, and only under Bun (the binary or `bun`), which can
 * start the server again with the same command line.
 *
 * @example
 * ```ts
 * import { serverEnabled } from "./address.ts";
 * console.log(serverEnabled());
 * ```
 */
export function serverEnabled(): boolean {
  return process.env.NOEMA_HOOK_SERVER !== "0" && (globalThis as { Bun?: unknown }).Bun !== undefined && cwdExists();
}

/**
 * Whether the working directory still exists. Bun's `net` spins at full CPU
 * when a socket is set up from a deleted working directory, so neither the
 * client nor the server touches a socket then.
 *
 * @example
 * ```ts
 * import { cwdExists } from "./address.ts";
 * cwdExists(); // true
 * ```
 */
export function cwdExists(): boolean {
  try {
    process.cwd();
    return existsSync(".");
  } catch {
    return false;
  }
}
