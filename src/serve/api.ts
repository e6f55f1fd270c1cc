/**
 * The JSON API under `/api/`: the same shapes as the CLI's `--json` (list
 * entries as `noema list --json`, an episode as `noema view --json`, events
 * as NDJSON exactly as stored as `noema events --json`, a decision as
 * `noema approve --json`), so scripts and the pages read the same data.
 *
 * @module
 */
import type { Context, Hono } from "hono";
import { join } from "node:path";
import { buildEpisodeView } from "../cli/episode_view.ts";
import { readLines } from "../store/jsonl.ts";
import { heldHere, startResume } from "./approvals.ts";
import { decideOn, episodeDirOf, runsOf, waitingOf } from "./source.ts";
import { approvalsTicker, episodeTicker, eventStream, runsTicker, storeRunsTicker } from "./live.ts";
import { episodeDirIn, HttpError } from "./paths.ts";
import { parseRunsQuery } from "./runs.ts";
import type { ServeConfig, ServeEnv } from "./config.ts";
import { liveWaterfall } from "./episode_overview.ts";

function intParam(c: Context, name: string, fallback: number, max: number): number {
  const v = c.req.query(name);
  if (v === undefined || v === "") return fallback;
  if (!/^\d{1,10}$/.test(v) || Number(v) > max) {
    throw new HttpError(400, "bad_parameter", `${name} must be an integer from 0 to ${max}, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

/** NDJSON of events `from` (1-based line) on, at most `limit` lines, exactly as stored. */
function eventLines(dir: string, from: number, limit: number): string {
  const out: string[] = [];
  try {
    for (const l of readLines(join(dir, "events.jsonl"), { noFollow: true })) {
      if (l.line < from || l.text === null || !l.terminated) continue;
      if (out.length >= limit) break;
      out.push(l.text);
    }
  } catch (e) {
    if ((e as { code?: string }).code !== "ENOENT") throw e;
  }
  return out.length ? `${out.join("\n")}\n` : "";
}

/** The body of a decision request: `{ note?, resume?, checkpoint_id? }` as JSON. */
async function decisionBody(c: Context): Promise<{ note: string | null; resume: boolean; checkpoint: string | null }> {
  if (!(c.req.header("content-type") ?? "").toLowerCase().startsWith("application/json")) {
    throw new HttpError(400, "bad_body", "send the decision as JSON (Content-Type: application/json)");
  }
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw new HttpError(400, "bad_body", "the body is not JSON");
  }
  // Anything but an object (`[]`, `1`, `null`) is no decision to take: refused, never read as an empty one.
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new HttpError(400, "bad_body", 'the body must be a JSON object: {"note", "resume", "checkpoint_id"}');
  }
  const b = body as Record<string, unknown>;
  const str = (k: string) => {
    if (b[k] === undefined || b[k] === null) return null;
    if (typeof b[k] !== "string") throw new HttpError(400, "bad_body", `${k} must be a string`);
    return b[k] as string;
  };
  if (b.resume !== undefined && typeof b.resume !== "boolean") {
    throw new HttpError(400, "bad_body", "resume must be true or false");
  }
  return { note: str("note"), resume: b.resume === true, checkpoint: str("checkpoint_id") };
}

/**
 * Adds the API routes to `app`.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { apiRoutes } from "./api.ts";
 * // apiRoutes(app, config)
 * ```
 */
export function apiRoutes(app: Hono<ServeEnv>, cfg: ServeConfig): void {
  const root = cfg.root;
  app.get(
    "/api/episodes",
    async (c) => c.json((await runsOf(cfg, parseRunsQuery(new URL(c.req.url).searchParams))).entries),
  );
  app.get("/api/episodes/:id", async (c) => {
    const id = c.req.param("id");
    return c.json(buildEpisodeView({ id, dir: (await episodeDirOf(cfg, id)).dir }));
  });
  app.get("/api/episodes/:id/events", async (c) => {
    const { dir } = await episodeDirOf(cfg, c.req.param("id"));
    const text = eventLines(dir, Math.max(1, intParam(c, "from", 1, 1e9)), intParam(c, "limit", 10_000, 100_000));
    return c.body(text, 200, { "content-type": "application/x-ndjson; charset=utf-8" });
  });
  app.get("/api/live/runs", (c) => {
    const q = parseRunsQuery(new URL(c.req.url).searchParams);
    const tick = cfg.store ? storeRunsTicker(() => runsOf(cfg, q)) : runsTicker(root, q);
    return eventStream(AbortSignal.any([c.req.raw.signal, cfg.closing]), tick);
  });
  app.get("/api/live/episodes/:id", (c) => {
    const id = c.req.param("id");
    const dir = episodeDirIn(root, id);
    const steps = intParam(c, "steps", 1, 10_000_000);
    return eventStream(
      AbortSignal.any([c.req.raw.signal, cfg.closing]),
      episodeTicker(
        dir,
        intParam(c, "offset", 0, 2 ** 52),
        c.req.query("seen") === "t",
        () => liveWaterfall(id, dir, Math.max(1, steps)),
      ),
    );
  });
  if (cfg.readOnly) return;
  app.get("/api/approvals", async (c) => c.json(await waitingOf(cfg)));
  app.get("/api/live/approvals", (c) => {
    const tick = approvalsTicker(() => waitingOf(cfg), cfg.store ? null : root);
    return eventStream(AbortSignal.any([c.req.raw.signal, cfg.closing]), tick);
  });
  for (const [verb, decision] of [["approve", "approved"], ["reject", "rejected"]] as const) {
    app.post(`/api/episodes/:id/${verb}`, async (c) => {
      const id = c.req.param("id");
      await episodeDirOf(cfg, id);
      const b = await decisionBody(c);
      const record = await decideOn(cfg, id, {
        decision,
        note: b.note,
        by: c.get("caller").label,
        checkpointId: b.checkpoint,
      });
      const resumed = b.resume && heldHere(root, id);
      if (resumed) await startResume(root, id, cfg.log, cfg.store?.store);
      // Not held here (a run of another machine, a pulled copy): recorded; the root that holds it applies it.
      const where = b.resume && !resumed
        ? { resumed: false, held_by: (await cfg.store?.store.get(id).catch(() => null))?.host ?? null }
        : {};
      return c.json({ ...(record as Record<string, unknown>), ...where }, resumed ? 202 : 200);
    });
  }
}
