/**
 * A language model backed by a recorded `model.jsonl`: exact replay with no
 * network. Call N returns what the model answered at turn N, but only when
 * the request is the one recorded (same conversation, same tools): if a tool
 * result or a verdict changed what the model would be sent, the call throws a
 * {@link ReplayDivergence} that says at which turn and where.
 *
 * @module
 */
import type { LanguageModel } from "ai";
import { EXIT, NoemaError } from "../errors.ts";
import { readJsonl } from "../store/jsonl.ts";
import type { Redactor } from "../runtime/redact.ts";
import { expandTurns, type ModelTurn, requestOf } from "./model_log.ts";

/** The replayed run asked the model something the recording does not have. */
export class ReplayDivergence extends Error {
  /** The model turn (1-based) that diverged. */
  readonly turn: number;
  /** Where the request differs, e.g. `prompt[3].content[0].output.value.stdout`. */
  readonly path: string;
  /** The recorded value there (JSON, cut), or null. */
  readonly recorded: string | null;
  /** The value the replay would send (JSON, cut), or null. */
  readonly actual: string | null;
  constructor(turn: number, path: string, recorded: unknown, actual: unknown, why?: string) {
    const show = (x: unknown) => x === undefined ? null : JSON.stringify(x)?.slice(0, 300) ?? null;
    super(
      why ??
        `replay diverged at model turn ${turn}: the request differs at ${path} (recorded ${
          show(recorded) ?? "nothing"
        }, now ${show(actual) ?? "nothing"})`,
    );
    this.name = "ReplayDivergence";
    this.turn = turn;
    this.path = path;
    this.recorded = show(recorded);
    this.actual = show(actual);
  }
}

function normalize(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(normalize);
  if (typeof x === "object" && x !== null) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(x).sort()) {
      if (k === "approvalId" || k === "providerOptions") continue;
      const v = (x as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = normalize(v);
    }
    return out;
  }
  return x;
}

/** The first path where two JSON values differ, or null. */
export function firstDifference(a: unknown, b: unknown, path = ""): { path: string; a: unknown; b: unknown } | null {
  if (JSON.stringify(a) === JSON.stringify(b)) return null;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
  } else if (typeof a === "object" && a && typeof b === "object" && b && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) {
      const d = firstDifference(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        path ? `${path}.${k}` : k,
      );
      if (d) return d;
    }
  }
  return { path: path || "(root)", a, b };
}

/**
 * Reads the turns of a `model.jsonl`, with whole requests (deltas expanded).
 * A damaged line is a usage error naming the file and the line: each turn's
 * request is a delta against the one before, so no later turn could be
 * rebuilt. A torn final line (a write a crash cut short) is left out.
 *
 * @example
 * ```ts
 * import { readModelLog } from "noema";
 * // const turns = readModelLog(".noema/episodes/ep_01K…/model.jsonl");
 * ```
 */
export function readModelLog(path: string): ModelTurn[] {
  const turns: ModelTurn[] = [];
  for (const e of readJsonl(path)) {
    if (!e.problem) turns.push(e.value as unknown as ModelTurn);
    else if (e.problem !== "torn") {
      throw new NoemaError("bad_model_log", `${e.message}: a damaged model log cannot be replayed`, {
        file: path,
        line: e.line,
        exitCode: EXIT.USAGE,
      });
    }
  }
  return expandTurns(turns);
}

// deno-lint-ignore no-explicit-any
function streamOf(response: NonNullable<ModelTurn["response"]>): ReadableStream<any> {
  // deno-lint-ignore no-explicit-any
  const parts: any[] = [{ type: "stream-start", warnings: [] }];
  response.content.forEach((c, i) => {
    const x = c as { type: string; text?: string };
    if (x.type === "text" || x.type === "reasoning") {
      parts.push({ type: `${x.type}-start`, id: String(i) });
      parts.push({ type: `${x.type}-delta`, id: String(i), delta: x.text ?? "" });
      parts.push({ type: `${x.type}-end`, id: String(i) });
    } else parts.push(c);
  });
  parts.push({ type: "finish", finishReason: response.finish_reason, usage: response.usage });
  return new ReadableStream({
    start(controller) {
      for (const p of parts) controller.enqueue(p);
      controller.close();
    },
  });
}

/**
 * A model that replays `turns`, checking each request against the recording
 * (masked with `redactor`, like the log). `from`: how many turns were
 * replayed already (a replay resumed after an approval pause goes on from
 * there). @default {0}
 *
 * @example
 * ```ts
 * import { readModelLog, replayModel } from "noema";
 * // const model = replayModel(readModelLog(".noema/episodes/ep_1/model.jsonl"), redactor);
 * ```
 */
export function replayModel(
  turns: readonly ModelTurn[],
  redactor: Redactor,
  from = 0,
): LanguageModel & { used(): number } {
  let next = from;
  const answer = (params: Parameters<typeof requestOf>[0]) => {
    const turn = turns[next];
    next++;
    if (!turn) {
      throw new ReplayDivergence(
        next,
        "(turns)",
        undefined,
        undefined,
        `replay diverged: the run asked the model for turn ${next}, but the recording has only ${turns.length}`,
      );
    }
    const live = normalize(requestOf(params, redactor));
    const recorded = normalize(turn.request);
    const d = firstDifference(recorded, live);
    if (d) throw new ReplayDivergence(next, d.path, d.a, d.b);
    if (!turn.response) {
      // The recorded failure again, as classifyModelError will read it (marked: it happened in the recorded run).
      const e = Object.assign(new Error(turn.error?.message ?? "recorded model error"), {
        replayed: true,
        ...(typeof turn.error?.status === "number" ? { statusCode: turn.error.status } : {}),
      });
      e.name = turn.error?.type ?? "Error";
      throw e;
    }
    return turn.response;
  };
  return {
    specificationVersion: "v4",
    provider: "noema.replay",
    modelId: turns[0]?.model ?? "replay",
    supportedUrls: {},
    used: () => next,
    // deno-lint-ignore require-await
    async doGenerate(params) {
      const r = answer(params);
      // deno-lint-ignore no-explicit-any
      return { content: r.content as any, finishReason: r.finish_reason as any, usage: r.usage as any, warnings: [] };
    },
    // deno-lint-ignore require-await
    async doStream(params) {
      return { stream: streamOf(answer(params)) };
    },
  } as LanguageModel & { used(): number };
}
