/**
 * A `postgres://` URL's TLS parameters, read as libpq reads them, turned
 * into the `postgres` client's `ssl` option. The client knows `sslmode`
 * only, and sends any other query parameter to the server as a setting
 * (`sslrootcert=/etc/ca.pem` made the server refuse the connection:
 * `unrecognized configuration parameter "sslrootcert"`).
 *
 * | `sslmode` | TLS | what is verified |
 * |---|---|---|
 * | `disable` | never | - |
 * | `allow`, `prefer` | when the server offers it | nothing (the client's own handling) |
 * | `require` | always | nothing; the chain, as `verify-ca`, when `sslrootcert` is given |
 * | `verify-ca` | always | the chain, against `sslrootcert`, else `~/.postgresql/root.crt` |
 * | `verify-full` | always | the chain, and the server's name against the URL's host |
 *
 * - `sslrootcert=system` verifies against the system's CAs.
 * - `sslcert` and `sslkey` (with `sslpassword` for an encrypted key) give a
 *   client certificate. Given without `sslmode`, any of these files means
 *   `require`.
 * - A file that cannot be read is a usage error naming the parameter.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { closeSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import type { PeerCertificate } from "node:tls";
import { EXIT, NoemaError } from "../../errors.ts";
import { nodeTls } from "../../builtins.ts";
import { openRegularFile } from "../../store/regular_file.ts";
import { urlHosts } from "./conninfo.ts";

/** The TLS parameters noema reads out of the URL (and removes from what the client sees). */
const TLS_PARAMS = ["sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword"] as const;

/** libpq's other TLS parameters: refused rather than sent to the server as settings. */
const UNSUPPORTED = ["sslcrl", "sslcrldir", "sslsni", "sslcompression", "ssl_min_protocol_version", "sslcertmode"];

const MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];

/** The client's `ssl` option: a mode it knows, or the options of `tls.connect`. */
export type ClientSsl = false | "allow" | "prefer" | "require" | Record<string, unknown>;

/** What {@link clientTls} makes of a URL. */
export interface ClientTls {
  /** The URL without the parameters read here. */
  url: string;
  /** The client's `ssl` option; undefined leaves the client's default (no TLS). */
  ssl: ClientSsl | undefined;
  /** `sslmode=…` and `sslrootcert=…` as given, for a TLS failure's message; "" when none. */
  summary: string;
}

type Env = Record<string, string | undefined>;

function readPem(param: string, path: string, usage: (m: string) => NoemaError): Buffer {
  try {
    const fd = openRegularFile(path); // a FIFO would block, a device never end
    try {
      return readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    throw usage(`${param}=${path} cannot be read: ${(e as Error).message}`);
  }
}

/**
 * The client's TLS settings for `url` (see the module doc).
 *
 * @example
 * ```ts
 * import { clientTls } from "./tls.ts";
 * const { url, ssl } = clientTls("postgres://runner@db.internal/noema?sslmode=verify-full&sslrootcert=/etc/ca.pem");
 * // url: "postgres://runner@db.internal/noema"; ssl: { ca: <the file's bytes>, rejectUnauthorized: true, … }
 * ```
 */
export function clientTls(url: string, env: Env = process.env, from = "the shared store URL"): ClientTls {
  const usage = (message: string) => new NoemaError("bad_store", `${from}: ${message}`, { exitCode: EXIT.USAGE });
  const q = url.indexOf("?");
  if (q === -1) return { url, ssl: undefined, summary: "" };
  const params = new URLSearchParams(url.slice(q + 1).split("#")[0]);
  const bad = UNSUPPORTED.find((p) => params.has(p));
  if (bad) throw usage(`${bad} is not supported (supported: ${TLS_PARAMS.join(", ")})`);
  const get = (p: string) => params.get(p) ?? undefined;
  const files = { root: get("sslrootcert"), cert: get("sslcert"), key: get("sslkey") };
  const given = files.root !== undefined || files.cert !== undefined || files.key !== undefined;
  const mode = get("sslmode") ?? (given ? "require" : undefined);
  if (mode !== undefined && !MODES.includes(mode)) throw usage(`sslmode=${mode} is not one of ${MODES.join(", ")}`);
  const passphrase = get("sslpassword");
  for (const p of TLS_PARAMS) params.delete(p);
  const rest = params.toString();
  const cleaned = url.slice(0, q) + (rest ? `?${rest}` : "");
  const summary = [mode && `sslmode=${mode}`, files.root && `sslrootcert=${files.root}`].filter(Boolean).join(", ");
  if (mode === undefined) return { url: cleaned, ssl: undefined, summary };
  if (mode === "disable") return { url: cleaned, ssl: false, summary };
  if (mode === "allow" || mode === "prefer") {
    if (given) throw usage(`sslrootcert, sslcert and sslkey need sslmode=require, verify-ca or verify-full`);
    return { url: cleaned, ssl: mode, summary };
  }
  const ssl: Record<string, unknown> = {};
  if ((files.cert === undefined) !== (files.key === undefined)) throw usage("sslcert and sslkey go together");
  if (files.cert !== undefined) {
    ssl.cert = readPem("sslcert", files.cert, usage);
    ssl.key = readPem("sslkey", files.key!, usage);
    if (passphrase !== undefined) ssl.passphrase = passphrase;
  }
  const verify = mode === "verify-ca" || mode === "verify-full" || (mode === "require" && files.root !== undefined);
  if (!verify) return { url: cleaned, ssl: { ...ssl, rejectUnauthorized: false }, summary };
  ssl.rejectUnauthorized = true;
  if (files.root !== "system") {
    const root = files.root ?? join(env.HOME || homedir(), ".postgresql", "root.crt");
    ssl.ca = files.root !== undefined
      ? readPem("sslrootcert", root, usage)
      : readPem("sslrootcert", root, () =>
        usage(`sslmode=${mode} needs a root certificate: sslrootcert=/path/to/ca.pem, or ${root}`));
  }
  const hosts = urlHosts(url);
  ssl.checkServerIdentity = mode === "verify-full"
    // Against the URL's host (the client gives an IP address no server name): any of several hosts.
    ? (_name: string, cert: PeerCertificate) => {
      const errors = (hosts.length ? hosts : [env.PGHOST || "localhost"]).map((h) =>
        nodeTls().checkServerIdentity(h, cert)
      );
      return errors.some((e) => e === undefined) ? undefined : errors[0];
    }
    : () => undefined;
  return { url: cleaned, ssl, summary };
}
