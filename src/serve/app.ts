/**
 * The web app of `noema serve`: security first (headers with a strict
 * Content-Security-Policy on every answer, the Host check that defeats DNS
 * rebinding on a token-less loopback server, the token, the same-origin check
 * on every state-changing request), then the pages, the approvals (unless
 * read-only) and the JSON API. Errors answer a clear 4xx in JSON under
 * `/api/` and as a page elsewhere; an internal error says so, never its stack.
 *
 * @module
 */
import { basename } from "node:path";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Context } from "hono";
import { NoemaError } from "../errors.ts";
import { apiRoutes } from "./api.ts";
import { decisionTaken, heldHere, startResume } from "./approvals.ts";
import { decideOn, episodeDirOf, runsOf, waitingOf, waitingOne } from "./source.ts";
import { APP_CSS, APP_JS } from "./assets.ts";
import { callerOf, crossOriginProblem, isLoopback, loginCookie } from "./auth.ts";
import { type Connection, otherUserProblem } from "./peer_user.ts";
import { comparePage } from "./compare.ts";
import { backtestFormPage, backtestPage, backtestUpload, MAX_REPORT } from "./backtest.ts";
import type { ServeConfig, ServeEnv } from "./config.ts";
import { episodePage } from "./episode.ts";
import { approvalsPage, errorPage, eventsListPage, loginPage, runsPage } from "./pages.ts";
import { episodeDirIn, HttpError, rawFilePath, readRegularFile } from "./paths.ts";
import { parseRunsQuery } from "./runs.ts";
import { searchRoutes } from "./search_page.ts";
import { fleetView } from "./fleet.ts";
import { keepRunsCache } from "./runs_index.ts";
import { isOutage } from "../shared_store/outage.ts";

/** The Content-Security-Policy of every answer: scripts and styles only from `/assets/`, no framing. */
export const SERVE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": SERVE_CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on its own forms.
  "referrer-policy": "same-origin",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

function fail(c: Context, status: number, code: string, message: string, extra: Record<string, string> = {}) {
  const headers = { ...extra, "cache-control": "no-store" };
  if (c.req.path.startsWith("/api/")) return c.json({ error: { code, message } }, status as 400, headers);
  return c.html(errorPage(status, message), status as 400, headers);
}

/**
 * Why a request that reached the server over a connection is not from its own user (see peer_user.ts), or null.
 * A request made in this process (no bindings) is.
 */
function otherUser(env: unknown): string | null {
  if (env === undefined) return null;
  const connection = typeof env === "object" && env !== null && "connection" in env
    ? (env as { connection?: Connection | null }).connection
    : null;
  if (connection == null) return "cannot tell which local user sent this request (no connection details)";
  return otherUserProblem(connection);
}

function hostName(host: string): string {
  return host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:\d+$/, "");
}

/** Adds the security middleware: headers, Host check, token, same-origin check. */
function guard(app: Hono<ServeEnv>, cfg: ServeConfig): void {
  app.use(async (c, next) => {
    await next();
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) c.res.headers.set(k, v);
    if (!c.res.headers.has("cache-control")) c.res.headers.set("cache-control", "no-store");
  });
  app.use(async (c, next) => {
    const host = c.req.header("host") ?? "";
    if (cfg.tokens.byToken.size === 0 && !isLoopback(hostName(host))) {
      return fail(c, 403, "bad_host", `Host ${JSON.stringify(host)} is not loopback; this server has no token`);
    }
    // Without tokens, only the server's own user: another account on the machine reads and decides nothing.
    const other = cfg.tokens.byToken.size === 0 ? otherUser(c.env) : null;
    if (other !== null) return fail(c, 403, "other_user", `refused: ${other}`);
    const stateChanging = !["GET", "HEAD", "OPTIONS"].includes(c.req.method);
    if (stateChanging) {
      const problem = crossOriginProblem({
        origin: c.req.header("origin") ?? null,
        host: host || null,
        fetchSite: c.req.header("sec-fetch-site") ?? null,
      });
      if (problem !== null) return fail(c, 403, "cross_origin", `refused: ${problem}`);
    }
    const path = c.req.path;
    if (path.startsWith("/assets/") || path === "/login") return await next();
    const caller = callerOf(cfg.tokens, c.req.header("authorization") ?? null, c.req.header("cookie") ?? null);
    if (caller === null) {
      if (path.startsWith("/api/")) {
        return fail(c, 401, "unauthorized", "a token is required: Authorization: Bearer <token>", {
          "www-authenticate": 'Bearer realm="noema"',
        });
      }
      return c.html(loginPage(null), 401);
    }
    c.set("caller", caller);
    return await next();
  });
  // A request body is read whole by the routes: bounded before that (a backtest report may be large, a decision not).
  app.use(async (c, next) => {
    const maxSize = c.req.path === "/backtest" ? MAX_REPORT_BYTES : MAX_BODY_BYTES;
    const limit = bodyLimit({
      maxSize,
      onError: (c) => fail(c, 413, "too_large", `the request body is larger than ${maxSize} bytes`),
    });
    return await limit(c, next);
  });
}

/** The largest request body a route reads, bytes (a decision, a login, an API call). */
const MAX_BODY_BYTES = 1 << 20;
/** The largest `POST /backtest` body: the largest report (see backtest.ts) and its form's framing. */
const MAX_REPORT_BYTES = MAX_REPORT + (1 << 20);

function loginRoutes(app: Hono<ServeEnv>, cfg: ServeConfig): void {
  app.get("/login", (c) => c.html(loginPage(null)));
  app.post("/login", async (c) => {
    const form = await c.req.parseBody();
    const token = typeof form.token === "string" ? form.token.trim() : "";
    if (cfg.tokens.byToken.size === 0) return c.redirect("/", 303);
    if (callerOf(cfg.tokens, `Bearer ${token}`, null) === null || token === "") {
      return c.html(loginPage("That token is not valid."), 401);
    }
    c.header("set-cookie", loginCookie(token));
    return c.redirect("/", 303);
  });
}

function pageRoutes(app: Hono<ServeEnv>, cfg: ServeConfig): void {
  const approvals = !cfg.readOnly;
  app.get("/assets/app.css", (c) => c.body(APP_CSS, 200, { "content-type": "text/css; charset=utf-8" }));
  app.get("/assets/app.js", (c) => c.body(APP_JS, 200, { "content-type": "text/javascript; charset=utf-8" }));
  app.get("/", async (c) => {
    const search = new URL(c.req.url).searchParams;
    for (const [k, v] of [...search]) if (v === "") search.delete(k);
    const q = parseRunsQuery(search);
    return c.html(runsPage(q, search, await runsOf(cfg, q), approvals));
  });
  app.get("/episodes/:id", async (c) => {
    const id = c.req.param("id");
    const steps = c.req.query("steps") ?? "1";
    if (!/^\d{1,7}$/.test(steps) || steps === "0") {
      throw new HttpError(400, "bad_parameter", "steps must be a positive integer");
    }
    const { dir, pulled } = await episodeDirOf(cfg, id);
    const waiting = approvals ? await waitingOne(cfg, id) : null;
    return c.html(episodePage(id, dir, { approvals, stepsPage: Number(steps), waiting, live: !pulled }));
  });
  app.get("/episodes/:id/events", async (c) => {
    const id = c.req.param("id");
    const p = c.req.query("page") ?? "1";
    if (!/^\d{1,7}$/.test(p) || p === "0") throw new HttpError(400, "bad_parameter", "page must be a positive integer");
    return c.html(eventsListPage(id, (await episodeDirOf(cfg, id)).dir, Number(p), approvals));
  });
  app.get("/episodes/:id/files/*", async (c) => {
    const id = c.req.param("id");
    const { dir } = await episodeDirOf(cfg, id);
    const rawPath = new URL(c.req.url).pathname;
    const rest = rawPath.slice(rawPath.indexOf("/files/") + "/files/".length);
    let segments: string[];
    try {
      segments = rest.split("/").map((s) => decodeURIComponent(s));
    } catch {
      throw new HttpError(400, "invalid_path", "the path is not valid percent-encoding");
    }
    const bytes = readRegularFile(rawFilePath(dir, segments));
    return c.body(bytes as Uint8Array<ArrayBuffer>, 200, {
      "content-type": "text/plain; charset=utf-8",
      "content-disposition": "inline",
    });
  });
  app.get("/fleet", async (c) => c.html(await fleetView(cfg)));
  app.get("/compare", (c) => {
    const a = c.req.query("a") ?? "", b = c.req.query("b") ?? "";
    return c.redirect(`/compare/${encodeURIComponent(a.trim())}/${encodeURIComponent(b.trim())}`, 303);
  });
  app.get("/compare/:a/:b", async (c) => {
    const a = c.req.param("a"), b = c.req.param("b");
    const da = (await episodeDirOf(cfg, a)).dir, db = (await episodeDirOf(cfg, b)).dir;
    return c.html(comparePage({ id: a, dir: da }, { id: b, dir: db }, approvals));
  });
  app.get("/backtest", (c) => c.html(backtestFormPage(approvals)));
  app.post("/backtest", async (c) => c.html(backtestPage(await backtestUpload(await c.req.parseBody()), approvals)));
}

function approvalRoutes(app: Hono<ServeEnv>, cfg: ServeConfig): void {
  const { root } = cfg;
  app.get("/approvals", async (c) => c.html(approvalsPage(await waitingOf(cfg))));
  app.post("/approvals/:id/decide", async (c) => {
    const id = c.req.param("id");
    await episodeDirOf(cfg, id);
    const form = await c.req.parseBody();
    const decision = form.decision === "approved" || form.decision === "rejected" ? form.decision : null;
    if (decision === null) throw new HttpError(400, "bad_body", "decision must be approved or rejected");
    const note = typeof form.note === "string" && form.note.trim() !== "" ? form.note : null;
    const checkpointId = typeof form.checkpoint === "string" ? form.checkpoint : null;
    await decideOn(cfg, id, { decision, note, by: c.get("caller").label, checkpointId });
    if (form.resume === "1" && heldHere(root, id)) await startResume(root, id, cfg.log, cfg.store?.store);
    return c.redirect(`/episodes/${encodeURIComponent(id)}`, 303);
  });
  app.post("/approvals/:id/resume", async (c) => {
    const id = c.req.param("id");
    episodeDirIn(root, id);
    if (!heldHere(root, id)) throw new HttpError(409, "not_held", `episode ${id} is not paused on this machine`);
    // Nothing to resume until someone decided: said now (409), not after a redirect to a page where nothing happens.
    if (!(await decisionTaken(root, id, cfg.store?.store))) {
      throw new HttpError(409, "no_decision", `episode ${id} waits for a decision: approve or reject it first`);
    }
    await startResume(root, id, cfg.log, cfg.store?.store);
    return c.redirect(`/episodes/${encodeURIComponent(id)}`, 303);
  });
}

/**
 * The app: a Hono instance whose `fetch` answers requests.
 *
 * @example
 * ```ts
 * import { createApp } from "./app.ts";
 * import { parseTokens } from "./auth.ts";
 * const app = createApp({ root: "/w/.noema", tokens: parseTokens(""), readOnly: false, log: console.error });
 * const res = await app.fetch(new Request("http://127.0.0.1/"));
 * ```
 */
export function createApp(cfg: ServeConfig): Hono<ServeEnv> {
  const app = new Hono<ServeEnv>();
  guard(app, cfg);
  loginRoutes(app, cfg);
  pageRoutes(app, cfg);
  if (!cfg.readOnly) approvalRoutes(app, cfg);
  searchRoutes(app, cfg);
  apiRoutes(app, cfg);
  app.notFound((c) => fail(c, 404, "not_found", `no such page: ${c.req.path}`));
  // The root's runs cache: a first sorted view after a restart reads no sealed run (read-only: never written).
  if (!cfg.store) keepRunsCache(cfg.root, { write: !cfg.readOnly, log: cfg.log });
  app.onError((e, c) => {
    if (e instanceof HttpError) return fail(c, e.status, e.code, e.message);
    if (e instanceof NoemaError && e.code === "not_found") return fail(c, 404, e.code, e.message);
    // A link planted in an episode (an artifact read through it): refused, 403, as the page's own path checks say
    // (without the server's absolute path); a bad id: 400.
    if (e instanceof NoemaError && e.code === "unsafe_path") {
      return fail(c, 403, e.code, `${basename(e.location.file ?? "")}: a symbolic link; refused`);
    }
    if (e instanceof NoemaError && e.code === "invalid_id") return fail(c, 400, e.code, e.message);
    // The store cannot be reached (down, a cut link): said so, 503, the page to be asked again (its URL's password is
    // masked in the message).
    if (isOutage(e)) {
      cfg.log(`noema serve: ${c.req.method} ${c.req.path}: ${e.message}`);
      return fail(c, 503, "store_unavailable", `${e.message}; try again once it is back`, { "retry-after": "5" });
    }
    // The store refused this server's database role the right (deciding takes a member of noema_server): the
    // request is refused, 403, saying why, not an internal error.
    if (e instanceof NoemaError && (e.code === "store_privilege" || e.code === "store_read_only")) {
      cfg.log(`noema serve: ${c.req.method} ${c.req.path}: ${e.message}`);
      return fail(c, 403, e.code, e.message);
    }
    cfg.log(`noema serve: ${c.req.method} ${c.req.path}: ${(e as Error).message ?? e}`);
    return fail(c, 500, "internal", "internal error (logged by the server)");
  });
  return app;
}
