/**
 * What a `postgres://` URL names, read from its text: the `URL` class
 * cannot parse an authority that lists several hosts (`host1:5432,host2`),
 * which the `postgres` client accepts. The password file (`pgpass.ts`) and
 * TLS (`tls.ts`) both match on it.
 *
 * @module
 */
import { userInfo } from "node:os";
import process from "node:process";

/** The host, port, database and user a connection is made with. */
export interface ConnectionTarget {
  /** The host name, or the Unix-socket directory. */
  host: string;
  /** The port. */
  port: string;
  /** The database name. */
  database: string;
  /** The user name. */
  user: string;
}

type Env = Record<string, string | undefined>;

/** A URL's user info (null when it has none), its `host[:port]` entries as written, and what follows them. */
function authority(url: string): { userinfo: string | null; hosts: string[]; rest: string } {
  const after = url.slice(url.indexOf("://") + 3);
  const end = after.search(/[/?#]/);
  const text = end === -1 ? after : after.slice(0, end);
  const at = text.lastIndexOf("@");
  return {
    userinfo: at === -1 ? null : text.slice(0, at),
    hosts: text.slice(at + 1).split(",").filter((h) => h !== ""),
    rest: end === -1 ? "" : after.slice(end),
  };
}

/** One `host[:port]` entry, an IPv6 address without its brackets, decoded. */
function hostPort(entry: string): { host: string; port: string } {
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(entry);
  const host = (m?.[1] ?? entry).replace(/^\[|\]$/g, "");
  return { host: decodeURIComponent(host), port: m?.[2] ?? "" };
}

/**
 * The hosts a URL names, in order, without ports.
 *
 * @example
 * ```ts
 * import { urlHosts } from "./conninfo.ts";
 * urlHosts("postgres://u@db1:5432,[::1]:5433/noema"); // ["db1", "::1"]
 * ```
 */
export function urlHosts(url: string): string[] {
  return authority(url).hosts.map((h) => hostPort(h).host).filter((h) => h !== "");
}

/**
 * The `host:port` pairs a URL names, in order, with the client's default
 * port (`PGPORT`, else 5432) where one has none.
 *
 * @example
 * ```ts
 * import { urlHostPorts } from "./conninfo.ts";
 * urlHostPorts("postgres://u@db1:5433,db2/noema", {}); // [{ host: "db1", port: "5433" }, { host: "db2", port: "5432" }]
 * ```
 */
export function urlHostPorts(url: string, env: Env = process.env): { host: string; port: string }[] {
  return authority(url).hosts.map(hostPort).map(({ host, port }) => ({
    host: host || env.PGHOST || "localhost",
    port: port || env.PGPORT || "5432",
  }));
}

/**
 * The URL with its list of hosts cut to the first (`h1:5432,h2:5433` →
 * `h1:5432`), which the `URL` class can parse; the URL as it is when it names
 * one host.
 *
 * @example
 * ```ts
 * import { firstHostUrl } from "./conninfo.ts";
 * new URL(firstHostUrl("postgres://u@db1:5432,db2:5433/noema")).host; // "db1:5432"
 * ```
 */
export function firstHostUrl(url: string): string {
  const { userinfo, hosts, rest } = authority(url);
  if (hosts.length < 2) return url;
  return url.slice(0, url.indexOf("://") + 3) + (userinfo === null ? "" : `${userinfo}@`) + hosts[0] + rest;
}

/**
 * Whether a `postgres://` URL carries a password of its own
 * (`postgres://user:password@host/db`).
 *
 * @example
 * ```ts
 * import { urlHasPassword } from "./conninfo.ts";
 * urlHasPassword("postgres://runner@db/noema"); // false
 * ```
 */
export function urlHasPassword(url: string): boolean {
  const { userinfo } = authority(url);
  return userinfo !== null && /:./.test(userinfo);
}

/**
 * The host, port, database and user a `postgres://` URL connects to, with
 * the defaults the `postgres` client applies (`PGHOST`, `PGPORT`, `PGUSER`,
 * `PGDATABASE`, then `localhost`, 5432, the OS user, the user's name). Of
 * several hosts (`host1,host2`), the first.
 *
 * @example
 * ```ts
 * import { connectionTarget } from "./conninfo.ts";
 * connectionTarget("postgres://runner@db.internal/noema", {});
 * // { host: "db.internal", port: "5432", database: "noema", user: "runner" }
 * ```
 */
export function connectionTarget(url: string, env: Env = process.env): ConnectionTarget {
  const { userinfo, hosts, rest } = authority(url);
  const first = hosts.length > 0 ? hostPort(hosts[0]) : { host: "", port: "" };
  const name = userinfo === null ? "" : decodeURIComponent(userinfo.split(":")[0]);
  const user = name || env.PGUSERNAME || env.PGUSER || osUser();
  const path = rest.startsWith("/") ? decodeURIComponent(rest.slice(1).split(/[?#]/)[0]) : "";
  return {
    host: first.host || env.PGHOST || "localhost",
    port: first.port || env.PGPORT || "5432",
    database: path || env.PGDATABASE || user,
    user,
  };
}

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? process.env.LOGNAME ?? "";
  }
}
