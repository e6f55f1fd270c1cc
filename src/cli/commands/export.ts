/**
 * `noema export otel <episode…>`: sends recorded episodes to an
 * OpenTelemetry collector as GenAI traces (the same trace a live export of
 * the run gave), or writes them as OTLP/JSON with `--file`.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { writeFileAtomic } from "../../store/atomic.ts";
import { EXIT, NoemaError } from "../../errors.ts";
import { captureFromEnv, otelSettings } from "../../export/otel/config.ts";
import { type EpisodeRef, episodesJson, sendEpisodes } from "../../export/otel/episode.ts";
import { locateEpisodeRef } from "../episode_ref.ts";
import { type CliContext, examples, globalOptions } from "../context.ts";
import { usageError } from "../errors.ts";

/** Registers `noema export` and its `otel` subcommand. */
export function registerExport(program: CommandUnknownOpts, ctx: CliContext): void {
  const exp = program
    .command("export")
    .summary("export episodes to other tools (otel)")
    .description("Export recorded episodes to other tools. `noema export otel` sends them as OpenTelemetry traces.");
  exp
    .command("otel")
    .summary("send episodes to an OpenTelemetry collector as GenAI traces")
    .description(
      "Send episodes as OpenTelemetry traces (GenAI conventions: invoke_agent, execute_tool per act step with its " +
        "verdict, chat per model turn with its tokens), to the collector named by --endpoint or the OTEL_* " +
        "variables, or write them as OTLP/JSON with --file. Ids derive from the episode, so a second export gives " +
        "the same trace. Content (arguments, results, messages) is left out unless --capture-content or " +
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true; it is masked as in the files.",
    )
    .argument("<episode...>", "episode ids, unique id prefixes, 'last', or paths to episode directories")
    .option("--endpoint <url>", "collector URL: a base (…:4318, /v1/traces is added) or the traces URL itself")
    .option("--protocol <protocol>", "http/protobuf (default) or http/json; else OTEL_EXPORTER_OTLP_PROTOCOL")
    .option("--file <out.json>", "write OTLP/JSON to this file instead of sending (no collector needed)")
    .option("--capture-content", "include tool arguments and results, model messages and the task (masked)")
    .option("--json", "print {episodes: [{episode_id, trace_id, spans}], endpoint|file} as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema export otel last --endpoint http://127.0.0.1:4318", "the last run, to a local Jaeger or collector"],
        ["noema export otel ep_01K9… ep_01KA… --file traces.json", "OTLP/JSON, no collector"],
        ["OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 noema export otel last", "the standard variables"],
      ) + "\nExit 0 when the collector took every span, 1 when it did not (or an episode is missing), 2 on bad " +
        "flags or settings.\n",
    )
    .action(async (episodes, opts, cmd) => {
      const g = globalOptions(cmd);
      const refs: EpisodeRef[] = episodes.map((e) => {
        const loc = locateEpisodeRef(e, g);
        return { id: loc.id, dir: loc.dir };
      });
      const capture = opts.captureContent === true || captureFromEnv();
      if (opts.file !== undefined) {
        if (opts.endpoint !== undefined) throw usageError("--file and --endpoint: choose one");
        if (opts.protocol !== undefined && opts.protocol !== "http/json") {
          throw usageError(`--protocol: ${opts.protocol}: --file writes OTLP/JSON (http/json); drop --protocol`);
        }
        const { text, episodes: done } = episodesJson(refs, capture);
        writeFileAtomic(opts.file, text + "\n");
        if (opts.json) ctx.out.json({ episodes: done, file: opts.file });
        else ctx.out.line(`noema: wrote ${done.length} episode(s), ${count(done)} spans, to ${opts.file}`);
        return;
      }
      const settings = otelSettings({ endpoint: opts.endpoint, protocol: opts.protocol, capture });
      if (settings === null) {
        throw usageError("no collector: give --endpoint URL, set OTEL_EXPORTER_OTLP_ENDPOINT, or write --file");
      }
      const { episodes: done, failed } = await sendEpisodes(refs, settings);
      if (failed) {
        throw new NoemaError("export_failed", `OpenTelemetry export to ${failed.url} failed: ${failed.message}`, {
          exitCode: EXIT.ERROR,
        });
      }
      if (opts.json) ctx.out.json({ episodes: done, endpoint: settings.url });
      else ctx.out.line(`noema: sent ${done.length} episode(s), ${count(done)} spans, to ${settings.url}`);
    });
}

function count(done: { spans: number }[]): number {
  return done.reduce((n, e) => n + e.spans, 0);
}
