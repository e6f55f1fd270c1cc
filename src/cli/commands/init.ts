/**
 * `noema init policy|adapter NAME`: writes a commented, typed, working plugin
 * (`NAME.ts`) and a `node:test` test for it (`NAME.test.ts`) into `--dir`
 * (default: the current directory). Existing files are kept unless `--force`.
 *
 * @module
 */
import { Argument, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";
import { type CliContext, examples } from "../context.ts";
import { usageError } from "../errors.ts";
import { pluginFiles, type PluginKind, pluginNames } from "../templates/plugins.ts";

/** What {@link initPlugin} wrote. */
export interface InitResult {
  /** `policy` or `adapter`. */
  kind: PluginKind;
  /** Absolute path of the plugin file. */
  plugin: string;
  /** Absolute path of its test. */
  test: string;
  /** Files that existed and were replaced (`force`). */
  overwritten: string[];
}

/**
 * Writes a plugin and its test into `dir`. Refuses (usage error, exit 2,
 * nothing written) when either file exists, unless `force`.
 *
 * @example
 * ```ts
 * import { initPlugin } from "./init.ts";
 * const { plugin, test } = initPlugin("policy", "no-force-push", { dir: "/tmp/policies" });
 * ```
 */
export function initPlugin(
  kind: PluginKind,
  name: string,
  options: { dir?: string; force?: boolean } = {},
): InitResult {
  const names = pluginNames(name);
  if (typeof names === "string") throw usageError(names);
  const dir = resolve(options.dir ?? process.cwd());
  const files = pluginFiles(kind, names).map((f) => ({ ...f, path: join(dir, f.name) }));
  const existing = files.filter((f) => existsSync(f.path)).map((f) => f.path);
  if (existing.length > 0 && !options.force) {
    throw new NoemaError(
      "exists",
      `${existing.map((p) => relative(process.cwd(), p) || p).join(", ")}: ${
        existing.length === 1 ? "already exists" : "already exist"
      } (use --force to overwrite)`,
      {
        exitCode: EXIT.USAGE,
      },
    );
  }
  try {
    mkdirSync(dir, { recursive: true });
    for (const f of files) writeFileSync(f.path, f.text);
  } catch (e) {
    throw new NoemaError("write_failed", `cannot write into ${dir}: ${(e as Error).message}`, { exitCode: EXIT.ERROR });
  }
  return { kind, plugin: files[0].path, test: files[1].path, overwritten: existing };
}

/** Registers `noema init`. */
export function registerInit(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("init")
    .summary("write a new policy or adapter plugin and its test")
    .description(
      "Write a commented, typed, working plugin file NAME.ts and a node:test test NAME.test.ts for it.\n" +
        "Existing files are not overwritten unless --force.",
    )
    .addArgument(new Argument("<kind>", "what to write").choices(["policy", "adapter"] as const))
    .argument("<name>", "plugin name, e.g. no-force-push (file no-force-push.ts, class NoForcePush)")
    .option("-d, --dir <dir>", "directory to write into (default: the current directory)")
    .option("-f, --force", "overwrite existing files")
    .option("-j, --json", "print {kind, plugin, test, overwritten} as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema init policy no-force-push", "no-force-push.ts and no-force-push.test.ts here"],
        ["noema init adapter my-agent --dir plugins", "an adapter under plugins/"],
        ["noema run 'push it' --using shell --policy no-force-push.ts", "use the policy"],
        ["bun test no-force-push.test.ts", "run its test (or deno test -A)"],
      ) + '\nPlugins import "noema"; see docs/plugins.md for how that resolves.\n',
    )
    .action((kind, name, opts) => {
      const result = initPlugin(kind, name, { dir: opts.dir, force: opts.force === true });
      const { out } = ctx;
      if (opts.json) {
        out.json(result);
        return;
      }
      const rel = (p: string) => relative(process.cwd(), p) || p;
      for (const p of [result.plugin, result.test]) {
        out.line(`${result.overwritten.includes(p) ? "overwrote" : "wrote"} ${rel(p)}`);
      }
      out.line("");
      out.line("Next:");
      if (kind === "policy") out.line(`  noema run "tidy up" --using shell --policy ${rel(result.plugin)}`);
      else {out.line(
          `  noema run "try it" --using ${
            rel(result.plugin).startsWith(".") || rel(result.plugin).startsWith("/") ? "" : "./"
          }${rel(result.plugin)}`,
        );}
      out.line(`  bun test ${rel(result.test)}    # or: deno test -A ${rel(result.test)}`);
    });
}
