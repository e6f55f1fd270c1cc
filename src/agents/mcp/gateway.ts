/**
 * `noema mcp -- <server command…>`: an MCP server over stdio that starts the
 * real server as its child and relays every message both ways, line by line
 * and unchanged, except where governance speaks (see `governed.ts`):
 *
 * - a `tools/call` from the client is proposed to the session's episode
 *   first; allowed, it goes to the server and its result comes back as the
 *   server sent it, recorded (a policy's `review` may redact or block it);
 *   refused, the server never sees it and the client gets a tool result with
 *   `isError` saying why (what the model reads and adapts to);
 * - a `tools/list` result is pinned (see `pins.ts`) and leaves out the tools
 *   a deny rule always denies (see `tool_filter.ts`);
 * - a JSON-RPC batch line is split into its messages, so that no tool call
 *   in a batch passes ungoverned.
 *
 * Everything else (initialize, resources, prompts, completions, logging,
 * progress, cancellation, and the server's own requests: sampling,
 * elicitation, roots) passes through as sent. The episode seals when the
 * client disconnects (stdin ends), or `aborted` when the server exits first.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { describeThrown } from "../../plugins/thrown.ts";
import { GovernedSession, type GovernedSettings, type Message } from "./governed.ts";
import { LineSplitter } from "./lines.ts";

/** How the gateway runs. */
export interface GatewaySettings extends Omit<GovernedSettings, "fallbackName"> {
  /** The real server's command and arguments. */
  command: string;
  args: string[];
  /** The environment the server gets. */
  env: Record<string, string>;
  /** The client's side. */
  input: Readable;
  output: Writable;
  /** Aborted (SIGTERM, SIGINT): the server is stopped at once and the episode sealed, as when the client leaves. */
  signal?: AbortSignal;
}

/** How a gateway ended. */
export interface GatewayEnd {
  /** 0 the client disconnected, 1 the server exited (or could not start) first. */
  exitCode: 0 | 1;
  /** The episodes the session sealed, in order (none when it opened none). */
  episodeIds: readonly string[];
}

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
  readonly #governed: GovernedSession;
  #child: ChildProcess | null = null;
  #closing = false;
  #done!: (end: GatewayEnd) => void;

  constructor(s: GatewaySettings) {
    this.#s = s;
    this.#governed = new GovernedSession({ ...s, fallbackName: s.command });
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

  #fromClient(line: string): void {
    const batch = batchOf(line);
    if (batch !== null) return batch.forEach((one) => this.#fromClient(one));
    const routed = this.#governed.clientMessage(line);
    if (routed instanceof Promise) void routed.then((r) => this.#route(r));
    else this.#route(routed);
  }

  #route(routed: Awaited<ReturnType<GovernedSession["clientMessage"]>>): void {
    if (routed === null) return;
    if ("toServer" in routed) this.#toServer(routed.toServer);
    else this.#toClient(routed.toClient);
  }

  #fromServer(line: string): void {
    const batch = batchOf(line);
    if (batch !== null) return batch.forEach((one) => this.#fromServer(one));
    const out = this.#governed.serverMessage(line);
    if (out instanceof Promise) void out.then((o) => o !== null && this.#toClient(o));
    else if (out !== null) this.#toClient(out);
  }

  /** Ends the session once: the client's pending requests answered, the server stopped, the episode sealed. */
  async #finish(exitCode: 0 | 1, why: string, stopped = false): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    const serverGone = exitCode === 1;
    if (serverGone) {
      for (const id of this.#governed.pending()) {
        this.#toClient({ jsonrpc: "2.0", id, error: { code: -32603, message: `noema mcp: ${why}` } });
      }
    } else await stopChild(this.#child, stopped ? 0 : 1000);
    const episodeIds = await this.#governed.end(why, serverGone);
    // What was written to the client is out before the process may exit.
    await new Promise<void>((r) => this.#s.output.write("", () => r()));
    this.#done({ exitCode, episodeIds });
  }
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
