/**
 * The CLI side of the live OpenTelemetry export: `--otel URL` (a global
 * option) or the standard `OTEL_EXPORTER_OTLP_*` variables turn it on for
 * `run`, `resume` and `approve --resume` (see `src/export/otel/`).
 *
 * @module
 */
import { spawn } from "node:child_process";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { noemaArgv } from "../agents/noema_command.ts";
import { type OtelSettings, otelSettings } from "../export/otel/config.ts";
import { type LiveOtelExport, startLiveOtel } from "../export/otel/run_hooks.ts";
import { lowerProcess } from "../priority.ts";
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
    (id, offsets) => handOff(at, id, offsets, settings),
  );
}

/**
 * Starts `noema export otel <id> --continue-from …` in the background,
 * detached and at a lower priority, to send what a finished run did not send
 * in the time it waited (the spans of the lines past `offsets`, and the root).
 */
function handOff(root: string, id: string, offsets: number[], s: OtelSettings): void {
  const [cmd, ...args] = noemaArgv();
  const flags = ["--endpoint", s.url, "--protocol", s.protocol, "--continue-from", offsets.join(",")];
  const child = spawn(cmd, [
    ...args,
    "--root",
    root,
    "export",
    "otel",
    id,
    ...flags,
    ...(s.capture ? ["--capture-content"] : []),
  ], {
    detached: true,
    stdio: "ignore",
  });
  child.on("error", () => {}); // `noema export otel` sends it later
  lowerProcess(child.pid); // behind the runs of this machine
  child.unref();
}
