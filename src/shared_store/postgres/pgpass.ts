/**
 * The PostgreSQL password file (`~/.pgpass`, or the file `PGPASSFILE`
 * names), read as libpq reads it: the `postgres` client does not, and a
 * team's runners keep the store's password there rather than in a URL that
 * `ps` shows or a `noema.jsonc` that is committed.
 *
 * - Used only when neither the URL nor `PGPASSWORD` gives a password.
 * - Lines are `hostname:port:database:username:password`; each of the first
 *   four fields is a literal value or `*`, which matches anything; `\:` and
 *   `\\` stand for `:` and `\`. The first line that matches wins. Lines that
 *   begin with `#`, and lines with fewer than five fields, are skipped.
 * - A host name of `localhost` also matches a Unix-socket connection (a
 *   host that is a directory path); a socket directory also matches itself.
 * - A file that group or others may read or write is ignored, as libpq
 *   ignores it; the reason is kept, so a refused login can say why.
 *
 * @module
 */
import { closeSync, fstatSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { openRegularFile } from "../../store/regular_file.ts";
import type { ConnectionTarget } from "./conninfo.ts";

/** What {@link pgpassLookup} found. */
export interface PgpassResult {
  /** The password of the first matching line, or null. */
  password: string | null;
  /** Why a password file was not used (it exists but may not be read, or is open to others), or null. */
  ignored: string | null;
}

type Env = Record<string, string | undefined>;

/** A line's fields, `\:` and `\\` unescaped; a `:` after the fourth field belongs to the password. */
function fields(line: string): string[] | null {
  const out: string[] = [];
  let field = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "\\" && i + 1 < line.length) field += line[++i];
    else if (c === ":" && out.length < 4) {
      out.push(field);
      field = "";
    } else field += c;
  }
  out.push(field);
  return out.length === 5 ? out : null;
}

function hostMatches(pattern: string, host: string): boolean {
  return pattern === "*" || pattern === host || (pattern === "localhost" && host.startsWith("/"));
}

/**
 * The password the password file gives for `target`; `{ password: null }`
 * when there is no file or no line matches.
 *
 * @example
 * ```ts
 * import { pgpassLookup } from "./pgpass.ts";
 * pgpassLookup({ host: "db.internal", port: "5432", database: "noema", user: "runner" });
 * // { password: "…", ignored: null } with a line "db.internal:5432:*:runner:…" in ~/.pgpass
 * ```
 */
export function pgpassLookup(target: ConnectionTarget, env: Env = process.env): PgpassResult {
  const path = env.PGPASSFILE || join(env.HOME || homedir(), ".pgpass");
  let text: string;
  try {
    const fd = openRegularFile(path); // a FIFO named by PGPASSFILE would block
    try {
      const mode = fstatSync(fd).mode;
      if (mode & 0o077) {
        return {
          password: null,
          ignored: `${path} was not used: group or others have access to it (chmod 0600 ${path})`,
        };
      }
      text = readFileSync(fd, "utf8");
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    const code = (e as { code?: string }).code;
    return { password: null, ignored: code === "ENOENT" ? null : `${path} could not be read: ${(e as Error).message}` };
  }
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line === "" || line.startsWith("#")) continue;
    const f = fields(line);
    if (f === null) continue;
    const [host, port, database, user, password] = f;
    if (
      hostMatches(host, target.host) && (port === "*" || port === target.port) &&
      (database === "*" || database === target.database) && (user === "*" || user === target.user)
    ) return { password, ignored: null };
  }
  return { password: null, ignored: null };
}
