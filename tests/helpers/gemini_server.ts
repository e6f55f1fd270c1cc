/**
 * A scripted Gemini API server on 127.0.0.1, for running the real Gemini CLI
 * offline (`GOOGLE_GEMINI_BASE_URL`): `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`
 * (SSE `data: {candidates: […]}` chunks), `:generateContent` and
 * `:countTokens`.
 *
 * Requests that offer the `run_shell_command` tool are the agent's main
 * loop: each gets the next turn of the script (`functionCall` parts, text,
 * or both; once the script is used up, a closing text). Other requests are
 * Gemini CLI's side calls, answered in the JSON their response schema asks
 * for (the model router's `complexity_score`, the next-speaker check) or
 * plain text. Every request is recorded, so a test can check what the model
 * received (a veto reason in a `functionResponse`).
 *
 * @module
 */
import { createServer, type ServerResponse } from "node:http";
import { listenLocal, readBody } from "./local_http.ts";

/** One function call the scripted model makes. */
export interface GeminiCall {
  /** @default {"run_shell_command"} */
  name?: string;
  args: Record<string, unknown>;
}

/** One answer of the scripted model. */
export interface GeminiTurn {
  text?: string;
  calls?: GeminiCall[];
}

/** A request the server received. */
export interface GeminiRequest {
  path: string;
  body: Record<string, unknown>;
  /** Whether it offered `run_shell_command` (a main-loop request). */
  main: boolean;
}

/** A running server; `close()` it after the test. */
export interface GeminiServer {
  /** `http://127.0.0.1:<port>`: the value for `GOOGLE_GEMINI_BASE_URL`. */
  url: string;
  requests: GeminiRequest[];
  /** Every `functionResponse` the model received, in order, with the function's name. */
  functionResponses(): { name: string; response: Record<string, unknown> }[];
  close(): Promise<void>;
}

type Part = Record<string, unknown>;

function partsOf(turn: GeminiTurn): Part[] {
  const parts: Part[] = [];
  if (turn.text !== undefined) parts.push({ text: turn.text });
  for (const c of turn.calls ?? []) parts.push({ functionCall: { name: c.name ?? "run_shell_command", args: c.args } });
  return parts;
}

/** A side call's answer: the JSON its response schema asks for, else text. */
function sideAnswer(body: Record<string, unknown>): string {
  const schema = JSON.stringify((body.generationConfig ?? body.config ?? {}) as unknown);
  if (schema.includes("complexity_score")) {
    return JSON.stringify({ complexity_reasoning: "a scripted test", complexity_score: 10 });
  }
  if (schema.includes("next_speaker")) {
    return JSON.stringify({ reasoning: "the turn is complete", next_speaker: "user" });
  }
  return "Noema test";
}

function answer(res: ServerResponse, method: string, model: string, parts: Part[]): void {
  const chunk = {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: model,
  };
  if (method === "streamGenerateContent") {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.end(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
  } else {
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(chunk));
  }
}

/**
 * Starts the server with a script of main-loop turns.
 *
 * @example
 * ```ts
 * import { startGeminiServer } from "./helpers/gemini_server.ts";
 * const server = await startGeminiServer([{ calls: [{ args: { command: "ls" } }] }, { text: "done" }]);
 * // gemini -p … with GOOGLE_GEMINI_BASE_URL=server.url
 * await server.close();
 * ```
 */
export async function startGeminiServer(script: GeminiTurn[]): Promise<GeminiServer> {
  const requests: GeminiRequest[] = [];
  let next = 0;
  const server = createServer(async (req, res) => {
    const raw = await readBody(req);
    const path = (req.url ?? "/").split("?")[0];
    const route = /^\/v1beta\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/.exec(path);
    let body: Record<string, unknown>;
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      body = {};
    }
    if (req.method !== "POST" || !route) {
      res.writeHead(404, { "content-type": "application/json" }).end(
        JSON.stringify({ error: { code: 404, message: `no route ${req.method} ${path}`, status: "NOT_FOUND" } }),
      );
      return;
    }
    const [, model, method] = route;
    if (method === "countTokens") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"totalTokens":10}');
      return;
    }
    const main = JSON.stringify(body.tools ?? []).includes('"run_shell_command"');
    requests.push({ path, body, main });
    const parts = main ? partsOf(script[next++] ?? { text: "All done." }) : [{ text: sideAnswer(body) }];
    answer(res, method, model, parts);
  });
  const local = await listenLocal(server);
  return {
    url: `${local.origin}`,
    requests,
    functionResponses() {
      const last = requests.filter((r) => r.main).at(-1);
      const out: { name: string; response: Record<string, unknown> }[] = [];
      for (const c of (last?.body.contents ?? []) as { parts?: Part[] }[]) {
        for (const p of c.parts ?? []) {
          const fr = p.functionResponse as { name?: string; response?: Record<string, unknown> } | undefined;
          if (fr) out.push({ name: String(fr.name), response: fr.response ?? {} });
        }
      }
      return out;
    },
    close: local.close,
  };
}
