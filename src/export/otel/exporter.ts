/**
 * The official OTLP/HTTP exporters (`http/protobuf` or `http/json`) behind
 * one guard: the first failed export is reported once (`onFailure`), and
 * every later export fails at once, without touching the network, so a
 * collector that is down or slow costs a run one timeout at most. Also the
 * resource every span carries and the OTLP/JSON text of spans (`--file`).
 *
 * @module
 */
import process from "node:process";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { type ExportResult, ExportResultCode, type InstrumentationScope } from "@opentelemetry/core";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { detectResources, envDetector, type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace";
import { NOEMA_VERSION } from "../../version.ts";
import type { OtelSettings } from "./config.ts";

/** The instrumentation scope of noema's spans. */
export const SCOPE: InstrumentationScope = { name: "noema", version: NOEMA_VERSION };

/**
 * The resource: `service.name` noema (or `OTEL_SERVICE_NAME`), the attributes
 * of `OTEL_RESOURCE_ATTRIBUTES`, and the telemetry SDK's name.
 *
 * @example
 * ```ts
 * const resource = otelResource();
 * resource.attributes["service.name"]; // "noema"
 * ```
 */
export function otelResource(): Resource {
  const base = resourceFromAttributes({
    "service.name": "noema",
    "service.version": NOEMA_VERSION,
    "telemetry.sdk.name": "opentelemetry",
    "telemetry.sdk.language": "nodejs",
  });
  const fromEnv = detectResources({ detectors: [envDetector] });
  const named = process.env.OTEL_SERVICE_NAME?.trim();
  const merged = base.merge(fromEnv);
  return named ? merged.merge(resourceFromAttributes({ "service.name": named })) : merged;
}

/** Why an export failed, as said once. */
export interface ExportFailure {
  /** The collector's URL. */
  url: string;
  /** What went wrong (the exporter's error). */
  message: string;
}

/**
 * An OTLP exporter that reports its first failure and then stops sending.
 *
 * @example
 * ```ts
 * const exporter = new GuardedExporter(settings, (f) => console.error(f.message));
 * exporter.export(spans, (r) => console.log(r.code));
 * ```
 */
export class GuardedExporter implements SpanExporter {
  readonly #inner: SpanExporter;
  readonly #url: string;
  readonly #onFailure: (f: ExportFailure) => void;
  #failed: ExportFailure | null = null;
  #inFlight = 0;
  #idle: (() => void)[] = [];
  /** Spans the collector accepted. */
  sent = 0;

  constructor(settings: OtelSettings, onFailure: (f: ExportFailure) => void = () => {}) {
    const Exporter = settings.protocol === "http/json" ? JsonExporter : ProtoExporter;
    this.#inner = new Exporter({ url: settings.url, timeoutMillis: settings.timeoutMs });
    this.#url = settings.url;
    this.#onFailure = onFailure;
  }

  /** The first failure, or null. */
  get failed(): ExportFailure | null {
    return this.#failed;
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    if (this.#failed) return done({ code: ExportResultCode.FAILED, error: new Error(this.#failed.message) });
    this.#inFlight++;
    this.#inner.export(spans, (result) => {
      if (result.code === ExportResultCode.SUCCESS) this.sent += spans.length;
      else this.#fail(result.error);
      if (--this.#inFlight === 0) { for (const w of this.#idle.splice(0)) w(); }
      done(result);
    });
  }

  /**
   * Resolves when no export is in flight: the batch processor's own timer may
   * have started one that its `forceFlush` does not wait for.
   */
  idle(): Promise<void> {
    return this.#inFlight === 0 ? Promise.resolve() : new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Records a failure seen around the exporter (the batch processor's own timeout): reported as its own. */
  fail(error: Error | undefined): void {
    this.#fail(error);
  }

  #fail(error: Error | undefined): void {
    if (this.#failed) return;
    this.#failed = { url: this.#url, message: error?.message || "the collector did not accept the spans" };
    this.#onFailure(this.#failed);
  }

  /**
   * Sends `spans` and resolves with the failure, or null when they were
   * accepted (the export's own timeout bounds it).
   */
  send(spans: ReadableSpan[]): Promise<ExportFailure | null> {
    return new Promise((resolve) => {
      this.export(spans, (r) => resolve(r.code === ExportResultCode.SUCCESS ? null : this.#failed));
    });
  }

  shutdown(): Promise<void> {
    return this.#inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.#inner.forceFlush?.() ?? Promise.resolve();
  }
}

/**
 * The OTLP/JSON text of spans (an `ExportTraceServiceRequest`, as a
 * collector's `http/json` endpoint takes it).
 *
 * @example
 * ```ts
 * writeFileSync("out.json", otlpJson(spans));
 * ```
 */
export function otlpJson(spans: ReadableSpan[]): string {
  const bytes = JsonTraceSerializer.serializeRequest(spans);
  return new TextDecoder().decode(bytes ?? new Uint8Array());
}
