/**
 * What one `noema serve` serves and how: the root, the tokens in force,
 * whether approvals are served, where notes go; and the per-request values
 * the routes see.
 *
 * @module
 */
import type { Caller, Tokens } from "./auth.ts";
import type { StoreSource } from "./store_source.ts";
import type { Connection } from "./peer_user.ts";

/** The server's configuration. */
export interface ServeConfig {
  /** The root whose episodes are served (absolute). */
  root: string;
  /** The tokens in force (none: loopback only). */
  tokens: Tokens;
  /** Serve no approval page, form or API route. */
  readOnly: boolean;
  /** Where the server says what it did (resumes…), one line each. */
  log: (message: string) => void;
  /** A shared store served instead of (and besides) the root's own episodes. */
  store?: StoreSource;
  /** Aborted when the server stops: open event streams end. */
  closing: AbortSignal;
}

/**
 * The Hono environment of the app: the caller of each request, and the
 * connection it came on (`connection`: set by the server, null when the
 * runtime did not say; no bindings at all for a request made in this
 * process, `app.fetch(request)`).
 */
export type ServeEnv = { Variables: { caller: Caller }; Bindings: { connection?: Connection | null } | undefined };
