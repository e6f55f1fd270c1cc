/**
 * A scripted OpenAI Responses API server on 127.0.0.1, for running the real
 * Codex CLI offline: `POST /v1/responses`, streamed as SSE
 * (`response.created`, `response.output_item.added` / `.done` per item,
 * `response.completed`), the way Codex's `wire_api = "responses"` provider
 * reads it.
 *
 * Each request that offers Codex's `exec_command` tool is a main-loop
 * request, answered by the next turn of the script (function calls, text,
 * or both; once the script is used up, a closing text). Every request is
 * recorded, so a test can check what the model received (a veto reason in
 * a `function_call_output`).
 *
 * @module
 */
import { createServer, type ServerResponse } from "node:http";
import { listenLocal, readBody } from "./local_http.ts";

/** One function call the scripted model makes. */
export interface ScriptedCall {
  call_id: string;
  /** @default {"exec_command"} */
  name?: string;
  /** The call's arguments (sent as a JSON string). */
  arguments: Record<string, unknown>;
}

/** One answer of the scripted model. */
export interface ResponsesTurn {
  text?: string;
  calls?: ScriptedCall[];
}

/** A running server; `close()` it after the test. */
export interface ResponsesServer {
  /** `http://127.0.0.1:<port>/v1`: the provider's `base_url`. */
  url: string;
  /** Every request body, in order. */
  requests: Record<string, unknown>[];
  /** Every `function_call_output` the model received, by `call_id` (the latest wins). */
  toolOutputs(): Map<string, string>;
  close(): Promise<void>;
}

type Item = Record<string, unknown>;

function itemsOf(turn: ResponsesTurn, n: number): Item[] {
  const items: Item[] = [];
  if (turn.text !== undefined) {
    items.push({
      type: "message",
      id: `msg_${n}`,
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: turn.text, annotations: [] }],
    });
  }
  (turn.calls ?? []).forEach((c, i) => {
    items.push({
      type: "function_call",
      id: `fc_${n}_${i}`,
      status: "completed",
      call_id: c.call_id,
      name: c.name ?? "exec_command",
      arguments: JSON.stringify(c.arguments),
    });
  });
  return items;
}

function stream(res: ServerResponse, id: string, model: string, items: Item[]): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  send("response.created", { response: { id, object: "response", model, status: "in_progress", output: [] } });
  items.forEach((item, output_index) => {
    send("response.output_item.added", { output_index, item });
    send("response.output_item.done", { output_index, item });
  });
  const usage = {
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 15,
  };
  send("response.completed", {
    response: { id, object: "response", model, status: "completed", output: items, usage },
  });
  res.end();
}

/**
 * Starts the server with a script of main-loop turns.
 *
 * @example
 * ```ts
 * import { startResponsesServer } from "./helpers/responses_server.ts";
 * const server = await startResponsesServer([{ calls: [{ call_id: "c1", arguments: { cmd: "ls" } }] }, { text: "done" }]);
 * // codex with a model provider whose base_url is server.url …
 * await server.close();
 * ```
 */
export async function startResponsesServer(script: ResponsesTurn[]): Promise<ResponsesServer> {
  const requests: Record<string, unknown>[] = [];
  let next = 0;
  let n = 0;
  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const path = (req.url ?? "/").split("?")[0];
    let body: Record<string, unknown>;
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"bad json"}}');
      return;
    }
    if (req.method !== "POST" || path !== "/v1/responses") {
      res.writeHead(404, { "content-type": "application/json" }).end(
        JSON.stringify({ error: { message: `no route ${req.method} ${path}`, type: "not_found" } }),
      );
      return;
    }
    requests.push(body);
    const tools = Array.isArray(body.tools) ? body.tools as { name?: string }[] : [];
    const main = tools.some((t) => t?.name === "exec_command");
    const turn = main ? (script[next++] ?? { text: "All done." }) : { text: "Noema test" };
    stream(res, `resp_${++n}`, String(body.model ?? "gpt-test"), itemsOf(turn, n));
  });
  const local = await listenLocal(server);
  return {
    url: `${local.origin}/v1`,
    requests,
    toolOutputs() {
      const out = new Map<string, string>();
      for (const r of requests) {
        for (const item of (Array.isArray(r.input) ? r.input : []) as Item[]) {
          if (item?.type !== "function_call_output") continue;
          const o = item.output;
          out.set(String(item.call_id), typeof o === "string" ? o : JSON.stringify(o));
        }
      }
      return out;
    },
    close: local.close,
  };
}
