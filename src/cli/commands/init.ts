/**
 * `noema init policy|adapter NAME`: writes a commented, typed, working plugin
 * (`NAME.ts`) and a `node:test` test for it (`NAME.test.ts`) into `--dir`
 * (default: the current directory). Existing files are kept unless `--force`.
 *
 * @module
 */
import { calledAs, toolCalledAs } from "../../called_as.ts";
import { Argument, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
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

/** Quotes a path for a POSIX shell when it needs it. */
const shq = (p: string) => (/^[\w./@:+-]+$/.test(p) ? p : `'${p.replaceAll("'", "'\\''")}'`);

/** Whether a plugin in `dir` can import "noema": noema is installed in a node_modules above it, or it is inside noema. */
function noemaResolvesFrom(dir: string): boolean {
  for (let d = resolve(dir);; d = dirname(d)) {
    if (existsSync(join(d, "node_modules", "noema", "package.json"))) return true;
    const pkg = join(d, "package.json");
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, "utf8")) as { name?: unknown }).name === "noema") return true;
      } catch {
        // not ours
      }
    }
    if (dirname(d) === d) return false;
  }
}

/**
 * The commands printed after "Next:", each of which works where the files
 * were written, with only the noema CLI installed (tests/init.test.ts runs
 * them in a temp dir): a policy test and a run with the policy (the minimal
 * adapter executes nothing), or a run with the adapter; the node:test file
 * only where "noema" resolves as a package.
 *
 * @example
 * ```ts
 * // nextSteps("policy", result, (p) => p)[0][0] === 'noema policy test no-force-push.ts --command "rm -rf /"'
 * ```
 */
export function nextSteps(
  kind: PluginKind,
  result: InitResult,
  rel: (p: string) => string,
): [command: string, what: string][] {
  const file = shq(rel(result.plugin));
  const test = shq(rel(result.test));
  const steps: [string, string][] = kind === "policy"
    ? [
      [`${calledAs()} policy test ${file} --command "rm -rf /"`, "its verdict on an action, as JSON (exit 3: vetoed)"],
      [`${calledAs()} run "tidy up" --policy ${file}`, "a run with it (the minimal adapter executes nothing)"],
    ]
    : [[`${calledAs()} run "try it" --using ${/^[./]/.test(file) ? "" : "./"}${file}`, "a run with it"]];
  if (noemaResolvesFrom(dirname(result.test))) {
    steps.push([`${toolCalledAs("bun")} test ${test}`, `its test (or: deno test -A ${test})`]);
  }
  return steps;
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
        ['noema policy test no-force-push.ts --command "git push --force"', "its verdict on an action"],
        ['noema run "push it" --policy no-force-push.ts --using shell -- git push --force', "use the policy"],
        ["bun test no-force-push.test.ts", "run its test where the noema package is installed"],
      ) + '\nPlugins import "noema": the noema CLI (and the binary) serves it to the plugins it loads.\n',
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
      for (const [command, what] of nextSteps(kind, result, rel)) out.line(`  ${command}    # ${what}`);
      if (!noemaResolvesFrom(dirname(result.test))) {
        out.line(
          `  (${rel(result.test)} imports "noema": run it with bun test or deno test -A where the noema package ` +
            "is installed)",
        );
      }
    });
}
