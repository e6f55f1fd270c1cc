/**
 * A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 for
 * offline tests: `POST /v1/chat/completions`, streamed (SSE, when the request
 * says `stream: true`) or not. Each request gets the next scripted reply:
 * a text answer, tool calls (streamed as deltas split across chunks; with
 * `indexReuse` every call of a parallel batch reuses index 0, as some
 * Ollama-compatible servers do), an HTTP error (status, headers, body), or a
 * hang. Every request body is kept in `requests`.
 *
 * @module
 */
import { createServer, type ServerResponse } from "node:http";
import { listenLocal, readBody } from "./local_http.ts";

/** One scripted tool call. `arguments` is sent as is (it may be invalid JSON). */
export interface ScriptedCall {
  id: string;
  name: string;
  arguments: string;
}

/** One scripted reply. */
export type ScriptedReply =
  | { text: string; usage?: { prompt_tokens: number; completion_tokens: number } }
  | { tool_calls: ScriptedCall[]; text?: string; indexReuse?: boolean }
  | { status: number; headers?: Record<string, string>; body?: unknown }
  | { hang: true };

/** A script: fixed replies in order, or a function of the request body and its 0-based number. */
export type Script = ScriptedReply[] | ((body: Record<string, unknown>, n: number) => ScriptedReply);

/** A running scripted server. */
export interface OpenAiServer {
  /** Base URL for the provider, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  /** Request bodies, in order. */
  requests: Record<string, unknown>[];
  /** Request headers, in order. */
  headers: Record<string, string | string[] | undefined>[];
  close(): Promise<void>;
}

function usageOf(reply: ScriptedReply) {
  const u = "usage" in reply && reply.usage ? reply.usage : { prompt_tokens: 11, completion_tokens: 7 };
  return { ...u, total_tokens: u.prompt_tokens + u.completion_tokens };
}

function whole(reply: Extract<ScriptedReply, { text: string } | { tool_calls: ScriptedCall[] }>, model: string) {
  const calls = "tool_calls" in reply ? reply.tool_calls : [];
  return {
    id: "chatcmpl-scripted",
    object: "chat.completion",
    created: 1_700_000_000,
    model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: reply.text ?? null,
        ...(calls.length
          ? {
            tool_calls: calls.map((c) => ({
              id: c.id,
              type: "function",
              function: { name: c.name, arguments: c.arguments },
            })),
          }
          : {}),
      },
      finish_reason: calls.length ? "tool_calls" : "stop",
    }],
    usage: usageOf(reply),
  };
}

function chunks(reply: Extract<ScriptedReply, { text: string } | { tool_calls: ScriptedCall[] }>, model: string) {
  const base = { id: "chatcmpl-scripted", object: "chat.completion.chunk", created: 1_700_000_000, model };
  const out: unknown[] = [{
    ...base,
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
  }];
  const delta = (d: unknown) => out.push({ ...base, choices: [{ index: 0, delta: d, finish_reason: null }] });
  if (reply.text) {
    const t = reply.text, mid = Math.ceil(t.length / 2);
    delta({ content: t.slice(0, mid) });
    delta({ content: t.slice(mid) });
  }
  const calls = "tool_calls" in reply ? reply.tool_calls : [];
  calls.forEach((c, i) => {
    const index = "indexReuse" in reply && reply.indexReuse ? 0 : i;
    const a = c.arguments, third = Math.ceil(a.length / 3);
    // The first fragment brings id and name; later ones append to the arguments.
    delta({
      tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: a.slice(0, third) } }],
    });
    delta({ tool_calls: [{ index, function: { arguments: a.slice(third, 2 * third) } }] });
    delta({ tool_calls: [{ index, function: { arguments: a.slice(2 * third) } }] });
  });
  out.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: calls.length ? "tool_calls" : "stop" }] });
  out.push({ ...base, choices: [], usage: usageOf(reply) });
  return out;
}

/**
 * Starts the server.
 *
 * @example
 * ```ts
 * const server = await startOpenAiServer([{ text: "hello" }]);
 * // … provider base_url: server.url
 * await server.close();
 * ```
 */
export async function startOpenAiServer(script: Script): Promise<OpenAiServer> {
  const requests: Record<string, unknown>[] = [];
  const headers: OpenAiServer["headers"] = [];
  const hanging = new Set<ServerResponse>();
  const server = createServer(async (req, res) => {
    if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" }).end(
        JSON.stringify({ error: { message: "not found" } }),
      );
      return;
    }
    const text = await readBody(req);
    const body: Record<string, unknown> = text ? JSON.parse(text) : {};
    const n = requests.length;
    requests.push(body);
    headers.push({ ...req.headers });
    const reply = typeof script === "function" ? script(body, n) : script[n];
    if (!reply) {
      res.writeHead(500, { "content-type": "application/json" }).end(
        JSON.stringify({ error: { message: `script has no reply #${n + 1}` } }),
      );
      return;
    }
    if ("hang" in reply) {
      hanging.add(res);
      return;
    }
    if ("status" in reply) {
      res.writeHead(reply.status, { "content-type": "application/json", ...(reply.headers ?? {}) })
        .end(JSON.stringify(reply.body ?? { error: { message: `scripted ${reply.status}`, type: "scripted" } }));
      return;
    }
    const model = String(body.model ?? "scripted");
    if (body.stream) {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const c of chunks(reply, model)) res.write(`data: ${JSON.stringify(c)}\n\n`);
      res.end("data: [DONE]\n\n");
    } else {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(whole(reply, model)));
    }
  });
  const local = await listenLocal(server);
  return {
    url: `${local.origin}/v1`,
    requests,
    headers,
    close: () => {
      for (const r of hanging) r.destroy();
      return local.close();
    },
  };
}

/** The `role: "tool"` messages of a request body, by tool_call_id. */
export function toolMessages(body: Record<string, unknown>): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of (body.messages as { role: string; tool_call_id?: string; content?: string }[]) ?? []) {
    if (m.role === "tool" && m.tool_call_id) out.set(m.tool_call_id, String(m.content));
  }
  return out;
}
