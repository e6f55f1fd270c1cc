/**
 * Where and how spans go, from the standard `OTEL_*` variables and noema's
 * own flags (a flag wins over a variable):
 *
 * | setting | flag | variables |
 * |---|---|---|
 * | traces URL | `--otel URL` / `--endpoint URL` (a base URL gets `/v1/traces`) | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (as is), `OTEL_EXPORTER_OTLP_ENDPOINT` (+ `/v1/traces`) |
 * | protocol | `--protocol` | `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (default) or `http/json` |
 * | timeout | | `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, `OTEL_EXPORTER_OTLP_TIMEOUT` (ms, default 10000) |
 * | content | `--capture-content` | `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, `NOEMA_OTEL_CAPTURE_CONTENT=true` |
 * | service | | `OTEL_SERVICE_NAME` (default `noema`), `OTEL_RESOURCE_ATTRIBUTES` |
 *
 * Headers (`OTEL_EXPORTER_OTLP_HEADERS`, `…_TRACES_HEADERS`) and compression
 * are read by the official exporter itself.
 *
 * @module
 */
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";

/** The two OTLP/HTTP encodings. */
export const PROTOCOLS = ["http/protobuf", "http/json"] as const;

/** One of {@link PROTOCOLS}. */
export type OtlpProtocol = (typeof PROTOCOLS)[number];

/** How an export is sent. */
export interface OtelSettings {
  /** The traces URL (`…/v1/traces`). */
  url: string;
  protocol: OtlpProtocol;
  /** The longest one export may take (retries included), ms. */
  timeoutMs: number;
  /** Whether content (arguments, results, messages) is exported. */
  capture: boolean;
}

/** Overrides from the command line. */
export interface OtelFlags {
  /** `--otel URL` or `--endpoint URL`: a collector's base URL, or a URL ending in `/v1/traces`. */
  endpoint?: string;
  protocol?: string;
  capture?: boolean;
}

type Env = Record<string, string | undefined>;

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

/** A base URL with `/v1/traces` appended, unless it already names a traces path. */
function tracesUrl(base: string, from: string): string {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new NoemaError("usage", `${from}: not a URL: ${base}`, { exitCode: EXIT.USAGE });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new NoemaError("usage", `${from}: an OTLP/HTTP endpoint is http:// or https://, not ${url.protocol}`, {
      exitCode: EXIT.USAGE,
    });
  }
  if (url.pathname.endsWith("/v1/traces")) return url.toString();
  return `${base.replace(/\/+$/, "")}/v1/traces`;
}

/**
 * Whether content capture is asked for by the environment.
 *
 * @example
 * ```ts
 * captureFromEnv({ OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" }); // true
 * ```
 */
export function captureFromEnv(env: Env = process.env): boolean {
  const v = nonEmpty(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT) ??
    nonEmpty(env.NOEMA_OTEL_CAPTURE_CONTENT);
  return v?.toLowerCase() === "true";
}

/**
 * The export settings, or null when no endpoint is configured (no flag, no variable).
 * A bad URL or protocol is a usage error naming where it came from.
 *
 * @example
 * ```ts
 * otelSettings({ endpoint: "http://127.0.0.1:4318" });
 * // { url: "http://127.0.0.1:4318/v1/traces", protocol: "http/protobuf", timeoutMs: 10000, capture: false }
 * ```
 */
export function otelSettings(flags: OtelFlags = {}, env: Env = process.env): OtelSettings | null {
  let url: string | null = null;
  if (flags.endpoint !== undefined) url = tracesUrl(flags.endpoint, "--otel/--endpoint");
  else if (nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)) {
    const v = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)!;
    tracesUrl(v, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); // checked: used as is
    url = v;
  } else if (nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT)) {
    url = tracesUrl(nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT)!, "OTEL_EXPORTER_OTLP_ENDPOINT");
  }
  if (url === null) return null;
  return {
    url,
    protocol: protocolOf(flags, env),
    timeoutMs: timeoutOf(env),
    capture: flags.capture || captureFromEnv(env),
  };
}

function protocolOf(flags: OtelFlags, env: Env): OtlpProtocol {
  const [value, from] = flags.protocol !== undefined
    ? [flags.protocol, "--protocol"]
    : nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL) !== undefined
    ? [nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)!, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]
    : nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL) !== undefined
    ? [nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL)!, "OTEL_EXPORTER_OTLP_PROTOCOL"]
    : ["http/protobuf", ""];
  if ((PROTOCOLS as readonly string[]).includes(value)) return value as OtlpProtocol;
  throw new NoemaError("usage", `${from}: ${value}: noema exports http/protobuf or http/json (not grpc)`, {
    exitCode: EXIT.USAGE,
  });
}

function timeoutOf(env: Env): number {
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]) {
    const v = Number(nonEmpty(env[name]));
    if (nonEmpty(env[name]) !== undefined && Number.isFinite(v) && v > 0) return v;
  }
  return 10_000;
}
