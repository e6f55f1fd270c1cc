/**
 * The name of the user running noema, for records that name who decided
 * (an approval's `by`).
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { userInfo } from "node:os";
import process from "node:process";

/** The account whose numeric id is `uid`, from a passwd file's text (`name:pw:uid:…` lines); null when none. */
function passwdName(text: string, uid: number): string | null {
  for (const line of text.split("\n")) {
    const [name, , id] = line.split(":");
    if (name && id !== undefined && Number(id) === uid && id.trim() !== "") return name;
  }
  return null;
}

/**
 * The name of the OS account running this process: `os.userInfo()`'s, else
 * the `/etc/passwd` entry of the process's uid (Bun's `os.userInfo()` gives
 * `$USER`, or the literal `unknown` when it is unset, as under cron, systemd
 * or in containers), else `$USER`, `$LOGNAME` or `$USERNAME`, else `unknown`.
 *
 * @example
 * ```ts
 * import { osUserName } from "./os_user.ts";
 * osUserName(); // "ana"
 * ```
 */
export function osUserName(): string {
  try {
    const name = userInfo().username;
    if (name && name !== "unknown") return name;
  } catch {
    // no passwd entry for this uid (some containers)
  }
  try {
    const uid = process.getuid?.();
    const name = uid === undefined ? null : passwdName(readFileSync("/etc/passwd", "utf8"), uid);
    if (name) return name;
  } catch {
    // no /etc/passwd (Windows) or unreadable
  }
  const env = process.env;
  return env.USER || env.LOGNAME || env.USERNAME || "unknown";
}
