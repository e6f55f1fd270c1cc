/**
 * `noema mcp -- <server command…>`: an MCP server over stdio that starts the
 * real server as its child and relays every message both ways, line by line
 * and unchanged, except where governance speaks:
 *
 * - a `tools/call` from the client is proposed to the session's episode
 *   first (see `session.ts`); allowed, it goes to the server (with the
 *   arguments a policy patched, if one did) and its result comes back as the
 *   server sent it, recorded (a policy's `review` may redact or block it);
 *   refused, the server never sees it and the client gets a tool result with
 *   `isError` saying why (what the model reads and adapts to);
 * - a `tools/list` result is pinned (see `pins.ts`) and leaves out the tools
 *   a deny rule always denies (see `tool_filter.ts`).
 *
 * Everything else (initialize, resources, prompts, completions, logging,
 * progress, cancellation, and the server's own requests: sampling,
 * elicitation, roots) passes through as sent. The episode seals when the
 * client disconnects (stdin ends), or `aborted` when the server exits first.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { basename } from "node:path";
import type { Readable, Writable } from "node:stream";
import type { RuleLayer } from "../../runtime/rules/schema.ts";
import { describeThrown } from "../../plugins/thrown.ts";
import type { Decision } from "../core.ts";
import { reasonText } from "../dialect.ts";
import { gatePolicy } from "./gate_policy.ts";
import { LineSplitter } from "./lines.ts";
import { changedTool, type ListedTool, observeTools, SERVER_NAME, toolDigest } from "./pins.ts";
import { McpSession, type SessionSettings } from "./session.ts";
import { alwaysDenied } from "./tool_filter.ts";
import { callResult, deliveredResult, refusal } from "./results.ts";

/** How the gateway runs. */
export interface GatewaySettings {
  /** The real server's command and arguments. */
  command: string;
  args: string[];
  /** The environment the server gets. */
  env: Record<string, string>;
  /** The episodes root (pins live under it). */
  root: string;
  /** The server's name in `mcp__<server>__<tool>`. @default {the server's own name, from initialize} */
  server?: string;
  /** The session's episode settings (its policies get the gateway's pin policy added). */
  session: SessionSettings;
  /** The rule sets whose always-denied tools `tools/list` leaves out; none: every tool is listed. */
  hideDenied?: readonly RuleLayer[];
  /** Where relative paths of the rules start. */
  cwd: string;
  /** The client's side. @default {process.stdin, process.stdout} */
  input: Readable;
  output: Writable;
  /** Lines for the log (stderr). */
  log: (line: string) => void;
  /** Aborted (SIGTERM, SIGINT): the server is stopped at once and the episode sealed, as when the client leaves. */
  signal?: AbortSignal;
}

/** How a gateway ended. */
export interface GatewayEnd {
  /** 0 the client disconnected, 1 the server exited (or could not start) first. */
  exitCode: 0 | 1;
  /** The sealed episode's id, if one was opened. */
  episodeId: string | null;
}

type Message = Record<string, unknown> & { id?: unknown; method?: unknown; params?: unknown };

/** What the gateway remembers of a request it passed to the server. */
interface Forwarded {
  method: string;
  /** For tools/call: the episode's call id, and when it went. */
  callId?: string;
  started?: number;
}

const idKey = (id: unknown) => JSON.stringify(id);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Runs one gateway until the client disconnects or the server exits.
 *
 * @example
 * ```ts
 * import process from "node:process";
 * import { runGateway } from "./gateway.ts";
 * const end = await runGateway({ command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."],
 *   env: {}, root: ".noema", session: { options: { root: ".noema" } }, cwd: ".",
 *   input: process.stdin, output: process.stdout, log: console.error });
 * ```
 */
export function runGateway(settings: GatewaySettings): Promise<GatewayEnd> {
  return new Gateway(settings).run();
}

class Gateway {
  readonly #s: GatewaySettings;
  readonly #session: McpSession;
  #child: ChildProcess | null = null;
  #server: string | null;
  #client: string | null = null;
  readonly #forwarded = new Map<string, Forwarded>();
  /** Calls being decided, by request id: true once the client cancelled one. */
  readonly #deciding = new Map<string, boolean>();
  /** What this session's tools/list said of each tool. */
  readonly #tools = new Map<string, { digest: string; annotations: Record<string, unknown> | null }>();
  #calls = 0;
  #closing = false;
  #done!: (end: GatewayEnd) => void;

  constructor(s: GatewaySettings) {
    this.#s = s;
    this.#server = s.server ?? null;
    const gate = gatePolicy(() => this.#serverName(), {
      changed: (tool) => this.#changed(tool),
      annotations: (tool) => this.#tools.get(tool)?.annotations ?? null,
    });
    const policies = [...(s.session.options.policies ?? []), gate];
    this.#session = new McpSession({ ...s.session, options: { ...s.session.options, policies } });
  }

  run(): Promise<GatewayEnd> {
    return new Promise((resolve) => {
      this.#done = resolve;
      this.#startServer();
      const client = new LineSplitter((line) => this.#fromClient(line));
      this.#s.input.on("data", (chunk: Uint8Array) => this.#guard(() => client.push(chunk)));
      this.#s.input.on("end", () => void this.#finish(0, "the client disconnected"));
      this.#s.input.on("error", () => void this.#finish(0, "the client's stdin failed"));
      // A client gone while an answer is written (EPIPE): its stdin ends too, and the episode is still sealed.
      this.#s.output.on("error", () => {});
      const stop = () => void this.#finish(0, "noema mcp was stopped", true);
      if (this.#s.signal?.aborted) stop();
      else this.#s.signal?.addEventListener("abort", stop);
    });
  }

  #guard(work: () => void): void {
    try {
      work();
    } catch (e) {
      this.#s.log(`noema mcp: ${describeThrown(e).message}`);
    }
  }

  #startServer(): void {
    const child = spawn(this.#s.command, this.#s.args, { stdio: ["pipe", "pipe", "inherit"], env: this.#s.env });
    this.#child = child;
    const server = new LineSplitter((line) => this.#fromServer(line));
    child.stdout!.on("data", (chunk: Uint8Array) => this.#guard(() => server.push(chunk)));
    child.stdin!.on("error", () => {}); // a server that exits while we write: its exit says the rest
    child.on("error", (e) => {
      this.#s.log(`noema mcp: cannot start ${this.#s.command}: ${e.message}`);
      void this.#finish(1, `the MCP server could not start: ${e.message}`);
    });
    child.on("exit", (code, signal) => {
      const how = signal ? `signal ${signal}` : `exit code ${code}`;
      void this.#finish(1, `the MCP server exited (${how})`);
    });
  }

  #toServer(line: string): void {
    if (this.#child?.stdin?.writable) this.#child.stdin.write(line + "\n");
  }

  #toClient(value: string | Message): void {
    this.#s.output.write((typeof value === "string" ? value : JSON.stringify(value)) + "\n");
  }

  #serverName(): string {
    return this.#server ??= serverNameOf(null, this.#s.command);
  }

  #fromClient(line: string): void {
    // A JSON-RPC batch (MCP 2025-03-26) goes on as single messages: no tools/call in it passes ungoverned.
    const batch = batchOf(line);
    if (batch !== null) return batch.forEach((one) => this.#fromClient(one));
    const msg = parse(line);
    if (msg === null || typeof msg.method !== "string") return this.#toServer(line); // responses, odd lines
    if (msg.id !== undefined && msg.method === "tools/call") return void this.#call(msg, line);
    if (msg.id !== undefined) this.#forwarded.set(idKey(msg.id), { method: msg.method });
    if (msg.method === "initialize" && isObject(msg.params) && isObject(msg.params.clientInfo)) {
      const name = msg.params.clientInfo.name;
      this.#client = typeof name === "string" ? name : null;
    }
    if (msg.method === "notifications/cancelled" && isObject(msg.params)) {
      const key = idKey(msg.params.requestId);
      if (this.#deciding.has(key)) this.#deciding.set(key, true);
    }
    this.#toServer(line);
  }

  #fromServer(line: string): void {
    const batch = batchOf(line);
    if (batch !== null) return batch.forEach((one) => this.#fromServer(one));
    const msg = parse(line);
    const key = msg !== null && msg.method === undefined && msg.id !== undefined ? idKey(msg.id) : null;
    const sent = key === null ? undefined : this.#forwarded.get(key);
    if (sent === undefined) return this.#toClient(line); // notifications, the server's own requests
    this.#forwarded.delete(key!);
    if (sent.method === "initialize") {
      const info = isObject(msg!.result) && isObject(msg!.result.serverInfo) ? msg!.result.serverInfo.name : null;
      this.#server ??= serverNameOf(typeof info === "string" ? info : null, this.#s.command);
      this.#start();
    }
    if (sent.method === "tools/list" && isObject(msg!.result) && Array.isArray(msg!.result.tools)) {
      return this.#toClient(this.#listed(msg!, line));
    }
    if (sent.method === "tools/call" && sent.callId) return void this.#answered(sent, msg!, line);
    this.#toClient(line);
  }

  /** Opens the session's episode (once). */
  #start(): void {
    const task = `MCP session: ${this.#serverName()}${this.#client ? ` (client ${this.#client})` : ""}`;
    this.#session.start(task).catch((e) => this.#s.log(`noema mcp: no episode: ${describeThrown(e).message}`));
  }

  /** A tools/list result: tools pinned, always-denied ones left out. */
  #listed(msg: Message, line: string): string | Message {
    const result = msg.result as { tools: ListedTool[] };
    const server = this.#serverName();
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
    if (!this.#s.hideDenied) return line;
    const kept = result.tools.filter((t) =>
      !isObject(t) || alwaysDenied(this.#s.hideDenied, `mcp__${server}__${t.name}`, this.#s.cwd) === null
    );
    if (kept.length === result.tools.length) return line;
    return { ...msg, result: { ...msg.result as object, tools: kept } };
  }

  /** Why a tool is blocked by its pin, or null. */
  #changed(tool: string): string | null {
    const server = this.#serverName();
    const seen = this.#tools.get(tool)?.digest;
    const pin = changedTool(this.#s.root, server, tool, seen);
    if (pin === null) return null;
    return `${server} ${tool}: its description or input schema changed since it was pinned (${pin.digest}, now ` +
      `${seen ?? pin.changed?.digest}); blocked until accepted: noema mcp pins --accept ${server} ${tool}`;
  }

  /** A tools/call: decided first, then passed on (or refused). */
  async #call(msg: Message, line: string): Promise<void> {
    const key = idKey(msg.id);
    const params = isObject(msg.params) ? msg.params : {};
    const name = typeof params.name === "string" ? params.name : "";
    const args = isObject(params.arguments) ? params.arguments : {};
    this.#deciding.set(key, false);
    this.#calls++;
    try {
      if (!(await this.#session.episodeId())) this.#start(); // a client that called before initialize finished
      const { callId, decision } = await this.#session.decide({
        tool: `mcp__${this.#serverName()}__${name}`,
        arguments: args,
      });
      const cancelled = this.#deciding.get(key) === true;
      if (decision.verdict !== "allow" && decision.verdict !== "patch") {
        return this.#toClient(refusal(msg.id, refusalText(decision, !!this.#s.session.awaitDecision)));
      }
      if (cancelled) {
        await this.#session.record(callId, {
          status: "skipped",
          outcome: "cancelled by the client before it ran",
          error: { type: "Cancelled", message: "cancelled by the client before it ran" },
        });
        return;
      }
      this.#forwarded.set(key, { method: "tools/call", callId, started: performance.now() });
      const patched = decision.verdict === "patch" && isObject(msg.params);
      this.#toServer(patched ? JSON.stringify({ ...msg, params: { ...params, arguments: decision.input } }) : line);
    } catch (e) {
      this.#toClient(
        refusal(msg.id, `noema: the call could not be governed, so it was not made: ${describeThrown(e).message}`),
      );
    } finally {
      this.#deciding.delete(key);
    }
  }

  /** The server's answer to an allowed call: recorded, then passed on (as the policies' review says). */
  async #answered(sent: Forwarded, msg: Message, line: string): Promise<void> {
    const result = callResult(msg, performance.now() - (sent.started ?? performance.now()));
    let shown: string | Message = line;
    try {
      const review = await this.#session.record(sent.callId!, result);
      shown = deliveredResult(msg, review) ?? line;
    } catch (e) {
      this.#s.log(`noema mcp: result of ${sent.callId} not recorded: ${describeThrown(e).message}`);
    }
    this.#toClient(shown);
  }

  /** Ends the session once: the client's pending requests answered, the server stopped, the episode sealed. */
  async #finish(exitCode: 0 | 1, why: string, stopped = false): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    const serverGone = exitCode === 1;
    if (serverGone) {
      for (const key of this.#forwarded.keys()) {
        this.#toClient({ jsonrpc: "2.0", id: JSON.parse(key), error: { code: -32603, message: `noema mcp: ${why}` } });
      }
    } else await stopChild(this.#child, stopped ? 0 : 1000);
    let episodeId: string | null = null;
    try {
      episodeId = await this.#session.episodeId();
      await this.#session.end({ message: `${why} after ${this.#calls} tool call(s)`, aborted: serverGone });
    } catch (e) {
      this.#s.log(`noema mcp: episode not sealed: ${describeThrown(e).message}`);
    }
    // What was written to the client is out before the process may exit.
    await new Promise<void>((r) => this.#s.output.write("", () => r()));
    this.#done({ exitCode, episodeId });
  }
}

/** What the client reads of a refused call: who refused it and why (and, for an approval nobody could give, so). */
function refusalText(decision: Decision, waits: boolean): string {
  const text = reasonText(decision, "denied");
  if (decision.verdict !== "ask" || waits) return text;
  return `${text} (this call needs approval, and this gateway was started without --wait: it is refused)`;
}

/** The server's name in tool names: the given one, or the server's own name made safe, or the command's. */
function serverNameOf(own: string | null, command: string): string {
  for (const candidate of [own, basename(command)]) {
    const safe = (candidate ?? "").replace(/[^A-Za-z0-9_-]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 64);
    if (SERVER_NAME.test(safe)) return safe;
  }
  return "server";
}

/** The messages of a JSON-RPC batch line, each as its own line; null when the line is not a batch. */
function batchOf(line: string): string[] | null {
  if (!line.trimStart().startsWith("[")) return null;
  try {
    const v = JSON.parse(line);
    return Array.isArray(v) && v.length > 0 ? v.map((m) => JSON.stringify(m)) : null;
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

/**
 * Stops the server: closes its stdin (how a stdio server is told to stop), then SIGTERM after `graceMs`, SIGKILL
 * 500 ms later. Quick, because the client gives the gateway 2 s after closing its stdin before it sends SIGTERM.
 */
async function stopChild(child: ChildProcess | null, graceMs: number): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<true>((r) => child.once("exit", () => r(true)));
  child.stdin?.end();
  for (const [signal, ms] of [["SIGTERM", graceMs], ["SIGKILL", 500], [null, 500]] as const) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<false>((r) => timer = setTimeout(() => r(false), ms));
    const gone = await Promise.race([exited, late]);
    clearTimeout(timer);
    if (gone || signal === null) return;
    child.kill(signal);
  }
}
