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
 * The name of the OS account running this process, as the system knows it, never as the environment says: on a
 * system with user ids, the `/etc/passwd` entry of the process's uid, else `os.userInfo()`'s (the system's user
 * database: NSS, LDAP) where the runtime asks the system (Node, Deno; Bun's `os.userInfo()` gives `$USER`, which
 * anyone can set), else `uid:<n>` (a uid with no name, as in containers run under an arbitrary uid). Without user ids
 * (Windows): `os.userInfo()`'s, else `$USERNAME`, else `unknown`. An approval records it as its authenticated
 * decider (`by`, `authenticated_as: "os_user"`): `USER=ana noema approve` must not make the record say ana decided.
 *
 * @example
 * ```ts
 * import { osUserName } from "./os_user.ts";
 * osUserName(); // "ana"
 * ```
 */
export function osUserName(): string {
  const uid = process.getuid?.();
  if (uid === undefined) {
    try {
      const name = userInfo().username;
      if (name && name !== "unknown") return name;
    } catch {
      // no user record
    }
    return process.env.USERNAME || "unknown";
  }
  try {
    const name = passwdName(readFileSync("/etc/passwd", "utf8"), uid);
    if (name) return name;
  } catch {
    // no /etc/passwd, or unreadable
  }
  if (!process.versions.bun) {
    try {
      const info = userInfo();
      if (info.uid === uid && info.username && info.username !== "unknown") return info.username;
    } catch {
      // no entry for this uid in the user database (some containers)
    }
  }
  return `uid:${uid}`;
}
