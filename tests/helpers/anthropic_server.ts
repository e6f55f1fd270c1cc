/**
 * A scripted Anthropic Messages server on 127.0.0.1, for running the real
 * Claude Code offline: `POST /v1/messages` (streamed as SSE, or one JSON
 * message when `stream` is false) and `POST /v1/messages/count_tokens`.
 *
 * Requests that offer a `Bash` tool are the agent's main loop: each one is
 * answered by the next turn of the script (text, tool calls, or both; once
 * the script is used up, a closing text). Other requests are side calls
 * (titles, summaries…) and get plain text. Every request is recorded, so a
 * test can check what the model received (e.g. a veto reason in a
 * `tool_result`).
 *
 * @module
 */
import { createServer, type ServerResponse } from "node:http";
import { listenLocal, readBody } from "./local_http.ts";

/** One tool call the scripted model makes. */
export interface ScriptedToolUse {
  /** @default {"toolu_<turn>_<index>"} */
  id?: string;
  name: string;
  input: Record<string, unknown>;
}

/** One answer of the scripted model: text, tool calls, or both. */
export interface Turn {
  text?: string;
  tools?: ScriptedToolUse[];
  /** The tokens the answer reports. @default {{ input_tokens: 10, output_tokens: 5 }} */
  usage?: TurnUsage;
  /** Instead of an answer, an API error: its HTTP status and the body's `error.type` and `error.message`. */
  error?: { status: number; type: string; message: string };
}

/** Token usage as the Messages API reports it. */
export interface TurnUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

const DEFAULT_USAGE: TurnUsage = { input_tokens: 10, output_tokens: 5 };

/** A request the server received. */
export interface RecordedRequest {
  path: string;
  body: Record<string, unknown>;
  /** Whether the request offered a `Bash` tool (a main-loop request). */
  main: boolean;
}

/** A running server; `close()` it after the test. */
export interface AnthropicServer {
  /** `http://127.0.0.1:<port>`: the value for `ANTHROPIC_BASE_URL`. */
  url: string;
  requests: RecordedRequest[];
  /** The main-loop requests, in order. */
  mainRequests(): RecordedRequest[];
  /** Every `tool_result` block the model received, by `tool_use_id` (the latest wins). */
  toolResults(): Map<string, { content: string; is_error: boolean }>;
  close(): Promise<void>;
}

type Block = { type: "text"; text: string } | { type: "tool_use"; id: string; name: string; input: unknown };

function blocksOf(turn: Turn, n: number): Block[] {
  const blocks: Block[] = [];
  if (turn.text !== undefined) blocks.push({ type: "text", text: turn.text });
  (turn.tools ?? []).forEach((t, i) => {
    blocks.push({ type: "tool_use", id: t.id ?? `toolu_${n}_${i}`, name: t.name, input: t.input });
  });
  return blocks;
}

function sse(res: ServerResponse, event: string, data: Record<string, unknown>): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
}

function streamMessage(res: ServerResponse, model: string, blocks: Block[], id: string, usage: TurnUsage): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const start = { ...usage, output_tokens: 1 };
  sse(res, "message_start", {
    message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, usage: start },
  });
  blocks.forEach((b, index) => {
    if (b.type === "text") {
      sse(res, "content_block_start", { index, content_block: { type: "text", text: "" } });
      sse(res, "content_block_delta", { index, delta: { type: "text_delta", text: b.text } });
    } else {
      sse(res, "content_block_start", {
        index,
        content_block: { type: "tool_use", id: b.id, name: b.name, input: {} },
      });
      sse(res, "content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) },
      });
    }
    sse(res, "content_block_stop", { index });
  });
  const stop = blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
  sse(res, "message_delta", {
    delta: { stop_reason: stop, stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  sse(res, "message_stop", {});
  res.end();
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((c) => (typeof c?.text === "string" ? c.text : JSON.stringify(c))).join("\n");
  }
  return JSON.stringify(content);
}

/**
 * Starts the server with a script of main-loop turns.
 *
 * @example
 * ```ts
 * import { startAnthropicServer } from "./helpers/anthropic_server.ts";
 * const server = await startAnthropicServer([{ tools: [{ name: "Bash", input: { command: "ls" } }] }, { text: "done" }]);
 * // run claude with ANTHROPIC_BASE_URL=server.url …
 * await server.close();
 * ```
 */
export async function startAnthropicServer(script: Turn[]): Promise<AnthropicServer> {
  const requests: RecordedRequest[] = [];
  let next = 0;
  let messages = 0;
  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    let body: Record<string, unknown> = {};
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end('{"type":"error"}');
      return;
    }
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "POST" && path === "/v1/messages/count_tokens") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ input_tokens: 10 }));
      return;
    }
    if (req.method !== "POST" || path !== "/v1/messages") {
      res.writeHead(404, { "content-type": "application/json" }).end(
        JSON.stringify({ type: "error", error: { type: "not_found_error", message: path } }),
      );
      return;
    }
    const tools = Array.isArray(body.tools) ? body.tools as { name?: string }[] : [];
    const main = tools.some((t) => t?.name === "Bash");
    requests.push({ path, body, main });
    const n = ++messages;
    const turn: Turn = main ? (script[next++] ?? { text: "All done." }) : { text: "Noema test" };
    if (turn.error) {
      // As the Messages API says it (an invalid key: 401 authentication_error), streamed request or not.
      const { status, type, message } = turn.error;
      res.writeHead(status, { "content-type": "application/json", "request-id": `req_${n}` })
        .end(JSON.stringify({ type: "error", error: { type, message } }));
      return;
    }
    const blocks = blocksOf(turn, n);
    const model = String(body.model ?? "claude-test");
    const id = `msg_${n}`;
    if (body.stream === false || body.stream === undefined) {
      const stop = blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
        id,
        type: "message",
        role: "assistant",
        model,
        content: blocks,
        stop_reason: stop,
        stop_sequence: null,
        usage: turn.usage ?? DEFAULT_USAGE,
      }));
      return;
    }
    streamMessage(res, model, blocks, id, turn.usage ?? DEFAULT_USAGE);
  });
  const local = await listenLocal(server);
  return {
    url: `${local.origin}`,
    requests,
    mainRequests: () => requests.filter((r) => r.main),
    toolResults() {
      const out = new Map<string, { content: string; is_error: boolean }>();
      for (const r of requests) {
        for (const m of (r.body.messages ?? []) as { role: string; content: unknown }[]) {
          if (m.role !== "user" || !Array.isArray(m.content)) continue;
          for (const c of m.content as Record<string, unknown>[]) {
            if (c.type !== "tool_result") continue;
            out.set(String(c.tool_use_id), { content: textOf(c.content), is_error: c.is_error === true });
          }
        }
      }
      return out;
    },
    close: local.close,
  };
}
