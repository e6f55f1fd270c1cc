/**
 * The governance of one MCP client session, whatever carries its messages
 * (stdio in `gateway.ts`): each message from the client is routed (to the
 * server as sent, or, for a refused `tools/call`, answered at once), and each
 * message from the server is passed on (as sent, or as governance changes
 * it: a `tools/list` result pinned and filtered, a `tools/call` result
 * recorded and reviewed).
 *
 * - A `tools/call` is proposed to the session's episode first (see
 *   `session.ts`); allowed, it goes to the server (with the arguments a policy
 *   patched, if one did); refused, the server never sees it and the client
 *   gets a tool result with `isError` saying why (what the model reads).
 * - Messages are classified loosely (any object with `"method": "tools/call"`
 *   and an `id` is a call), so that nothing shaped like a tool call passes
 *   ungoverned; everything else goes through unchanged, as the same line. A
 *   message the server could read otherwise than the gateway (not JSON, a
 *   repeated key, a batch holding a call) is not relayed at all (`admit.ts`).
 *
 * @module
 */
import { basename } from "node:path";
import type { RuleLayer } from "../../runtime/rules/schema.ts";
import { describeThrown } from "../../plugins/thrown.ts";
import type { Decision } from "../core.ts";
import { reasonText } from "../dialect.ts";
import { gatePolicy } from "./gate_policy.ts";
import { changedTool, type ListedTool, observeTools, SERVER_NAME, toolDigest } from "./pins.ts";
import { McpSession, type SessionSettings } from "./session.ts";
import type { RecordedReview } from "../../runtime/review_record.ts";
import { alwaysDenied } from "./tool_filter.ts";
import { callResult, deliveredResult, refusal } from "./results.ts";
import { admit } from "./admit.ts";

/** How a session is governed. */
export interface GovernedSettings {
  /** The episodes root (pins live under it). */
  root: string;
  /** The server's name in `mcp__<server>__<tool>`. @default {the server's own name, from initialize} */
  server?: string;
  /** The name used when neither `server` nor the server's own name will do (the command's base name). */
  fallbackName: string;
  /** The session's episode settings (its policies get the gateway's pin policy added). */
  session: SessionSettings;
  /** The rule sets whose always-denied tools `tools/list` leaves out; none: every tool is listed. */
  hideDenied?: readonly RuleLayer[];
  /** Where relative paths of the rules start. */
  cwd: string;
  /** Lines for the log (stderr). */
  log: (line: string) => void;
}

/** A JSON-RPC message, as the gateway reads it. */
export type Message = Record<string, unknown> & { id?: unknown; method?: unknown; params?: unknown };

/**
 * Where a client's message goes: to the server (this line), back to the client (this answer; `status`: the HTTP
 * status for a message refused as malformed, 400), or nowhere.
 */
export type Routed = { toServer: string } | { toClient: Message; status?: number } | null;

/** What the gateway remembers of a request it passed to the server. */
interface Forwarded {
  method: string;
  /** For tools/call: the episode's call id, and when it went. */
  callId?: string;
  started?: number;
  /** For tools/list: it asked for a page after the first (it had a cursor). */
  continued?: boolean;
  /** For tasks/result: the task whose call's result it brings. */
  taskId?: string;
  /** The client cancelled it (notifications/cancelled) while the server had it. */
  cancelled?: boolean;
}

/** A tools/call the server runs as a task (MCP tasks): its result comes with the client's tasks/result. */
interface CallTask {
  callId: string;
  started: number;
  /** Once recorded: what the policies' review said of it, applied to every delivery of it. */
  review?: RecordedReview | null;
}

const idKey = (id: unknown) => JSON.stringify(id);

function inFlightError(id: unknown): Message {
  const message = `noema mcp: invalid request: id ${idKey(id)} is already in flight; not relayed`;
  return {
    jsonrpc: "2.0",
    id: typeof id === "string" || typeof id === "number" ? id : null,
    error: { code: -32600, message },
  };
}
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * One governed client session.
 *
 * @example
 * ```ts
 * import { GovernedSession } from "./governed.ts";
 * const g = new GovernedSession({ root: ".noema", fallbackName: "fs", session: { options: {} }, cwd: ".", log: console.error });
 * const routed = await g.clientMessage('{"jsonrpc":"2.0","id":1,"method":"tools/list"}'); // { toServer: … }
 * ```
 */
export class GovernedSession {
  readonly #s: GovernedSettings;
  readonly #session: McpSession;
  #server: string | null;
  #client: string | null = null;
  readonly #forwarded = new Map<string, Forwarded>();
  /** Calls being decided, by request id: aborted once the client cancelled one (a wait for approval ends then). */
  readonly #deciding = new Map<string, AbortController>();
  /** What this session's tools/list said of each tool. */
  readonly #tools = new Map<string, { digest: string; annotations: Record<string, unknown> | null }>();
  /** The tools the client was shown in the current listing (its first page and the pages after it), by digest. */
  readonly #listing = new Map<string, string>();
  /** The calls run as tasks, by task id. */
  readonly #tasks = new Map<string, CallTask>();
  /** Aborted when the session ends: a call still waiting for a person's decision is abandoned, never made. */
  readonly #stop = new AbortController();
  #calls = 0;
  #initialized = false;

  constructor(s: GovernedSettings) {
    this.#s = s;
    this.#server = s.server ?? null;
    const gate = gatePolicy(() => this.#serverName(), {
      changed: (tool) => this.#changed(tool),
      annotations: (tool) => this.#tools.get(tool)?.annotations ?? null,
    });
    const policies = [...(s.session.options.policies ?? []), gate];
    this.#session = new McpSession({ ...s.session, options: { ...s.session.options, policies } });
  }

  /** Whether the server answered this session's initialize. */
  get initialized(): boolean {
    return this.#initialized;
  }

  /** The ids of the client's requests the server has not answered yet. */
  pending(): unknown[] {
    return [...this.#forwarded.keys()].map((k) => JSON.parse(k));
  }

  /**
   * The requests of a client's message (`line`) that the server will not answer: the HTTP exchange that carried them
   * failed or ended without their answers (an error the server gave no id, a refusal, a body that is no answer). They
   * are no longer in flight (the client may use their ids again); a call among them is recorded with `error` (what is
   * known of it: not delivered, or no usable answer, `upstream_fetch.ts`).
   */
  async settle(line: string, error: { type: string; message: string }): Promise<void> {
    for (const id of requestIds(line)) {
      const key = idKey(id), sent = this.#forwarded.get(key);
      if (sent === undefined) continue;
      this.#forwarded.delete(key);
      if (sent.callId === undefined || sent.method !== "tools/call") continue;
      await this.#session.record(sent.callId, { status: "error", error })
        .catch((e) => this.#s.log(`noema mcp: ${sent.callId} not recorded: ${describeThrown(e).message}`));
    }
  }

  /** Whether a request with this id is being decided or waits for the server's answer. */
  #inFlight(id: unknown): boolean {
    const key = idKey(id);
    return this.#forwarded.has(key) || this.#deciding.has(key);
  }

  #serverName(): string {
    return this.#server ??= serverNameOf(null, this.#s.fallbackName);
  }

  /**
   * Routes one message from the client (at once, except a tools/call, which is decided first). `gone`: aborted when
   * the client stops waiting for the answer (its HTTP request closed): a call still being decided is then abandoned.
   */
  clientMessage(line: string, gone?: AbortSignal): Routed | Promise<Routed> {
    const admitted = admit(line);
    if (!admitted.ok) {
      // Nothing the server could read otherwise than the gateway did reaches it (see admit.ts).
      this.#s.log(`noema mcp: ${admitted.why}`);
      return admitted.answer === null ? null : { toClient: admitted.answer, status: 400 };
    }
    if (Array.isArray(admitted.value)) return this.#batch(admitted.value, line);
    const msg = isObject(admitted.value) ? admitted.value as Message : null;
    if (msg === null || typeof msg.method !== "string") return { toServer: line }; // responses
    if (msg.id !== undefined && this.#inFlight(msg.id)) {
      // Two requests under one id: the answer to one would be recorded as the other's.
      this.#s.log(`noema mcp: request id ${idKey(msg.id)} is already in flight; not relayed`);
      return { toClient: inFlightError(msg.id), status: 400 };
    }
    if (msg.id !== undefined && msg.method === "tools/call") return this.#call(msg, line, gone);
    if (msg.id !== undefined) this.#forwarded.set(idKey(msg.id), this.#forwardedOf(msg));
    if (msg.method === "initialize" && isObject(msg.params) && isObject(msg.params.clientInfo)) {
      const name = msg.params.clientInfo.name;
      this.#client = typeof name === "string" ? name : null;
    }
    if (msg.method === "notifications/cancelled" && isObject(msg.params)) {
      const key = idKey(msg.params.requestId);
      this.#deciding.get(key)?.abort();
      const sent = this.#forwarded.get(key);
      if (sent?.callId !== undefined) sent.cancelled = true;
    }
    return { toServer: line };
  }

  /**
   * A batch (over HTTP; admitted: it holds no tools/call): its requests are remembered as any request is, so that
   * the answers to them (a tools/list result) are governed too.
   */
  #batch(items: unknown[], line: string): Routed {
    const requests = items.filter((m): m is Message =>
      isObject(m) && typeof m.method === "string" && m.id !== undefined
    );
    const ids = requests.map((m) => idKey(m.id));
    const taken = requests.find((m, i) => this.#inFlight(m.id) || ids.indexOf(idKey(m.id)) !== i);
    if (taken !== undefined) {
      this.#s.log(`noema mcp: request id ${idKey(taken.id)} is already in flight; not relayed`);
      return { toClient: inFlightError(taken.id), status: 400 };
    }
    for (const m of requests) this.#forwarded.set(idKey(m.id), forwarded(m));
    return { toServer: line };
  }

  /**
   * What the client gets of one message from the server (at once, except a tools/call result, recorded first). A
   * batch (a JSON array: the SDK's HTTP client takes one as a response) is governed message by message. An answer
   * to no request in flight is dropped (null): a server answering a call still being decided (waiting for a person's
   * approval, say) would have the client take its answer as the call's result, the call never made.
   */
  serverMessage(line: string): string | Message | null | Promise<string | Message | null> {
    const items = batchItems(line);
    if (items !== null) return this.#serverBatch(items, line);
    const msg = parse(line);
    // Whatever has no method of its own is an answer (`"method": null` too: a lenient client would take it as one).
    const key = msg !== null && typeof msg.method !== "string" && msg.id !== undefined ? idKey(msg.id) : null;
    const sent = key === null ? undefined : this.#forwarded.get(key);
    if (sent === undefined && key !== null && msg!.id !== null) {
      this.#s.log(`noema mcp: the server answered id ${key}, which is no request in flight; dropped`);
      return null;
    }
    if (sent === undefined) return line; // notifications, the server's own requests, an error about no request
    this.#forwarded.delete(key!);
    if (sent.method === "initialize" && isObject(msg!.result)) {
      this.#initialized = true;
      const info = isObject(msg!.result) && isObject(msg!.result.serverInfo) ? msg!.result.serverInfo.name : null;
      this.#server ??= serverNameOf(typeof info === "string" ? info : null, this.#s.fallbackName);
      this.#start();
    }
    if (sent.method === "tools/list" && isObject(msg!.result) && Array.isArray(msg!.result.tools)) {
      return this.#listed(msg!, line, sent.continued === true);
    }
    if (sent.method === "tools/call" && sent.callId) {
      const task = isObject(msg!.result) && isObject(msg!.result.task) ? msg!.result.task.taskId : undefined;
      if (typeof task !== "string") return this.#answered(sent, msg!, line);
      // A task created (MCP tasks): the call's result is what tasks/result will bring, recorded and reviewed then.
      this.#tasks.set(task, { callId: sent.callId, started: sent.started ?? performance.now() });
      return line;
    }
    if (sent.method === "tasks/result" && sent.callId) return this.#answered(sent, msg!, line);
    return line;
  }

  /** A batch from the server, each message governed; the same line when governance changed none. */
  async #serverBatch(items: unknown[], line: string): Promise<string> {
    const texts = items.map((m) => JSON.stringify(m));
    const outs = await Promise.all(texts.map((text) => this.serverMessage(text)));
    if (outs.every((out, i) => out === texts[i])) return line;
    return JSON.stringify(
      outs.filter((out) => out !== null).map((out) => typeof out === "string" ? JSON.parse(out) : out),
    );
  }

  /** What the gateway remembers of a request it passes to the server: a tasks/result, the call it brings the result of. */
  #forwardedOf(msg: Message): Forwarded {
    const taskId = msg.method === "tasks/result" && isObject(msg.params) ? msg.params.taskId : undefined;
    const task = typeof taskId === "string" ? this.#tasks.get(taskId) : undefined;
    if (!task) return forwarded(msg);
    return { method: "tasks/result", callId: task.callId, started: task.started, taskId: taskId as string };
  }

  /** Opens the session's episode (once). */
  #start(): void {
    const task = `MCP session: ${this.#serverName()}${this.#client ? ` (client ${this.#client})` : ""}`;
    this.#session.start(task).catch((e) => this.#s.log(`noema mcp: no episode: ${describeThrown(e).message}`));
  }

  /**
   * A tools/list result: tools pinned, always-denied ones left out. A tool listed again otherwise in one listing
   * (twice in a page, or on a later page) is left out after its first entry: the client is shown one description of
   * each tool, the one pinned and checked (else a server could list a changed description beside the pinned one,
   * the client show the model either, and the pinned one unblock the tool).
   */
  #listed(msg: Message, line: string, continued: boolean): string | Message {
    const server = this.#serverName();
    if (!continued) this.#listing.clear();
    const listed = (msg.result as { tools: ListedTool[] }).tools;
    const tools = listed.filter((t) => {
      if (!isObject(t) || typeof t.name !== "string") return true;
      const digest = toolDigest(t), first = this.#listing.get(t.name);
      if (first === undefined) this.#listing.set(t.name, digest);
      if (first === undefined || first === digest) return true;
      this.#s.log(
        `noema mcp: ${server} listed ${JSON.stringify(t.name)} again, otherwise; only its first entry is passed on`,
      );
      return false;
    });
    const result = { ...msg.result as object, tools };
    for (const t of result.tools) {
      if (!isObject(t) || typeof t.name !== "string") continue;
      const notes = isObject((t as Record<string, unknown>).annotations)
        ? (t as Record<string, unknown>).annotations as Record<string, unknown>
        : null;
      this.#tools.set(t.name, { digest: toolDigest(t), annotations: notes });
    }
    try {
      const changed = observeTools(this.#s.root, server, result.tools.filter((t) => isObject(t)));
      for (const name of changed) this.#s.log(`noema mcp: ${server} ${name}: tool_changed since pinned; blocked`);
    } catch (e) {
      this.#s.log(`noema mcp: pins of ${server} not written: ${describeThrown(e).message}`);
    }
    const kept = !this.#s.hideDenied
      ? tools
      : tools.filter((t) =>
        !isObject(t) || alwaysDenied(this.#s.hideDenied, `mcp__${server}__${t.name}`, this.#s.cwd) === null
      );
    if (kept.length === listed.length) return line;
    return { ...msg, result: { ...result, tools: kept } };
  }

  /** Why a tool is blocked by its pin, or null. */
  #changed(tool: string): string | null {
    const server = this.#serverName();
    const seen = this.#tools.get(tool)?.digest;
    const pin = changedTool(this.#s.root, server, tool, seen);
    if (pin === null) return null;
    return `${server} ${tool}: its description, schemas, title or annotations changed since it was pinned (${pin.digest}, now ` +
      `${seen ?? pin.changed?.digest}); blocked until accepted: noema mcp pins --accept ${server} ${tool}`;
  }

  /** A tools/call: decided first, then passed on (or refused). */
  async #call(msg: Message, line: string, gone?: AbortSignal): Promise<Routed> {
    const key = idKey(msg.id);
    const params = isObject(msg.params) ? msg.params : {};
    const name = typeof params.name === "string" ? params.name : "";
    const args = isObject(params.arguments) ? params.arguments : {};
    const cancel = new AbortController();
    this.#deciding.set(key, cancel);
    this.#calls++;
    try {
      if (this.#server === null) {
        // Without --name the tool's name comes from the server's initialize answer: deciding now would lock in the
        // command's base name (mcp__node__…), which no rule written for the server's name matches.
        return {
          toClient: refusal(msg.id, "noema: the call came before the server answered initialize; not made"),
        };
      }
      if (!(await this.#session.episodeId())) this.#start(); // a client that called before initialize finished
      const tool = `mcp__${this.#serverName()}__${name}`;
      const abandoned = AbortSignal.any([this.#stop.signal, cancel.signal, ...(gone ? [gone] : [])]);
      const { callId, decision } = await this.#session.decide({ tool, arguments: args }, abandoned);
      if (decision.verdict !== "allow" && decision.verdict !== "patch") {
        return { toClient: refusal(msg.id, refusalText(decision, !!this.#s.session.awaitDecision)) };
      }
      if (abandoned.aborted) {
        const why = cancel.signal.aborted
          ? "cancelled by the client before it ran"
          : "the client left (or the gateway stopped) before it ran";
        await this.#session.record(callId, {
          status: "skipped",
          outcome: why,
          error: { type: "Cancelled", message: why },
        });
        return null;
      }
      this.#forwarded.set(key, { method: "tools/call", callId, started: performance.now() });
      const patched = decision.verdict === "patch" && isObject(msg.params);
      return {
        toServer: patched ? JSON.stringify({ ...msg, params: { ...params, arguments: decision.input } }) : line,
      };
    } catch (e) {
      const why = `noema: the call could not be governed, so it was not made: ${describeThrown(e).message}`;
      return { toClient: refusal(msg.id, why) };
    } finally {
      this.#deciding.delete(key);
    }
  }

  /** The server's answer to an allowed call: recorded, then passed on (as the policies' review says). */
  async #answered(sent: Forwarded, msg: Message, line: string): Promise<string | Message> {
    const result = callResult(msg, performance.now() - (sent.started ?? performance.now()));
    const task = sent.taskId === undefined ? undefined : this.#tasks.get(sent.taskId);
    try {
      // A task's result fetched again is shown as reviewed the first time (the call is recorded once).
      const review = task?.review !== undefined ? task.review : await this.#session.record(sent.callId!, result);
      if (task) task.review = review;
      return deliveredResult(msg, review) ?? line;
    } catch (e) {
      this.#s.log(`noema mcp: result of ${sent.callId} not recorded: ${describeThrown(e).message}`);
      return line;
    }
  }

  /**
   * Seals the session's episode (aborted when the server died); returns the ids of every episode the session
   * sealed (none when it opened none; more than one after a rollover at the step limit).
   */
  async end(why: string, aborted: boolean): Promise<readonly string[]> {
    this.#stop.abort(); // a call waiting for a decision is given up (its wait ends, the call refused, never made)
    // A call the client cancelled while the server ran it, and no answer since: said so, not "not answered".
    for (const sent of this.#forwarded.values()) {
      if (!sent.cancelled || sent.callId === undefined || sent.method !== "tools/call") continue;
      const message = "the client cancelled the call while the server ran it (it may have acted); no result came";
      await this.#session.record(sent.callId, { status: "error", error: { type: "Cancelled", message } })
        .catch((e) => this.#s.log(`noema mcp: ${sent.callId} not recorded: ${describeThrown(e).message}`));
    }
    try {
      await this.#session.end({ message: `${why} after ${this.#calls} tool call(s)`, aborted });
    } catch (e) {
      this.#s.log(`noema mcp: episode not sealed: ${describeThrown(e).message}`);
    }
    return this.#session.sealed();
  }
}

/** What the client reads of a refused call: who refused it and why (and, for an approval nobody could give, so). */
function refusalText(decision: Decision, waits: boolean): string {
  const text = reasonText(decision, "denied");
  if (decision.verdict !== "ask" || waits) return text;
  return `${text} (this call needs approval, and this gateway was started without --wait: it is refused)`;
}

/** The server's name in tool names: the given one, or the server's own name made safe, or the command's. */
function serverNameOf(own: string | null, fallback: string): string {
  for (const candidate of [own, basename(fallback)]) {
    const safe = (candidate ?? "").replace(/[^A-Za-z0-9_-]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 64);
    if (SERVER_NAME.test(safe)) return safe;
  }
  return "server";
}

/** What the gateway remembers of a request it passes to the server (no tasks/result: see #forwardedOf). */
function forwarded(msg: Message): Forwarded {
  const continued = msg.method === "tools/list" && isObject(msg.params) && typeof msg.params.cursor === "string";
  return { method: msg.method as string, ...(continued ? { continued } : {}) };
}

/** The ids of the requests in a client's message (one, or a batch). */
function requestIds(line: string): unknown[] {
  const items = batchItems(line) ?? [parse(line)];
  return items.filter((m): m is Message => isObject(m) && typeof m.method === "string" && m.id !== undefined)
    .map((m) => m.id);
}

/** The messages of a JSON-RPC batch, or null when the line is not one. */
function batchItems(line: string): unknown[] | null {
  if (!line.trimStart().startsWith("[")) return null;
  try {
    const v = JSON.parse(line);
    return Array.isArray(v) && v.length > 0 ? v : null;
  } catch {
    return null;
  }
}

function parse(line: string): Message | null {
  try {
    const v = JSON.parse(line);
    return isObject(v) ? v as Message : null;
  } catch {
    return null;
  }
}
