/**
 * The CLI side of the live OpenTelemetry export: `--otel URL` (a global
 * option) or the standard `OTEL_EXPORTER_OTLP_*` variables turn it on for
 * `run`, `resume` and `approve --resume` (see `src/export/otel/`).
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { noemaArgv } from "../agents/noema_command.ts";
import { type OtelSettings, otelSettings } from "../export/otel/config.ts";
import process from "node:process";
import { childEnv } from "../plugins/process.ts";
import { LIVE_EXPORT_COMMAND } from "../export/otel/live_command.ts";
import { type LiveOtelExport, startLiveOtel } from "../export/otel/run_hooks.ts";
import { resolveRoot } from "../store/layout.ts";
import type { Output } from "./output.ts";

/**
 * The export settings in force for this command line, or null. A bad
 * `--otel` is a usage error; a bad variable is said on stderr and the run
 * goes on without export (a setting meant for other programs never stops one).
 *
 * @example
 * ```ts
 * // inside an action: const otel = otelSettingsOf(cmd, ctx.out);
 * ```
 */
export function otelSettingsOf(cmd: CommandUnknownOpts, out: Output): OtelSettings | null {
  const all = cmd.optsWithGlobals() as Record<string, unknown>;
  if (typeof all.otel === "string") return otelSettings({ endpoint: all.otel });
  try {
    return otelSettings();
  } catch (e) {
    out.note(`noema: ${(e as Error).message}; no OpenTelemetry export`);
    return null;
  }
}

/**
 * Starts the live export of a run under `root` (of episode `episodeId`
 * resumed, when given), or null without settings.
 *
 * @example
 * ```ts
 * const otel = liveOtelFor(settings, root, ctx.out);
 * ```
 */
export function liveOtelFor(
  settings: OtelSettings | null,
  root: string | undefined,
  out: Output,
  episodeId?: string,
): LiveOtelExport | null {
  if (settings === null) return null;
  const at = resolveRoot({ root });
  return startLiveOtel(
    settings,
    at,
    (m) => out.note(m),
    episodeId,
    // noema's own process, without noema's secrets (it reads the episode's files, masked already, and OTEL_*).
    { argv: [...noemaArgv(), LIVE_EXPORT_COMMAND], env: childEnv(process.env) },
  );
}
