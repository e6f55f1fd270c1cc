/**
 * `noema rules [--rules FILE…] [--json]` shows the rule sets in effect here
 * (the user's rules file, noema.jsonc's `rules` and `rules_file`, `--rules`
 * files), and `noema rules test --command CMD | --tool NAME [--input JSON]`
 * what they decide about one call, with the commands a shell line was read
 * as. A bad rule is a located error (exit 2), as at `noema run`.
 *
 * @module
 */
import { type CommandUnknownOpts, Help } from "@commander-js/extra-typings";
import { homedir } from "node:os";
import { resolve } from "node:path";
import process from "node:process";
import { EXIT } from "../../errors.ts";
import { resolveRunSettings } from "../../runtime/load_settings.ts";
import { loadRulesFile } from "../../runtime/rules/load.ts";
import { decideLayer } from "../../runtime/rules/match.ts";
import { rulesVerdict } from "../../runtime/rules/policy.ts";
import type { RuleLayer } from "../../runtime/rules/schema.ts";
import { ruleTarget } from "../../runtime/rules/tools.ts";
import { fileAccesses } from "../../runtime/rules/file_access.ts";
import { type CommandUnits, commandUnits } from "../../runtime/rules/unwrap.ts";
import { collect } from "../args.ts";
import { type CliContext, examples } from "../context.ts";
import { usageError } from "../errors.ts";

/** The rule sets in effect in the current directory, plus `--rules` files; their warnings go to stderr. */
function layersHere(ctx: CliContext, files: readonly string[] | undefined): RuleLayer[] {
  const rules = files?.map((f) => loadRulesFile(f));
  const resolved = resolveRunSettings({ taskOrFile: "-", options: rules ? { rules } : {} });
  for (const w of resolved.warnings) ctx.out.note(`noema: ${w}`);
  return [...(resolved.options.rules ?? [])];
}

function showLayers(ctx: CliContext, layers: readonly RuleLayer[]): void {
  if (layers.length === 0) {
    ctx.out.line("no rules here (noema.jsonc rules/rules_file, ~/.config/noema/rules.jsonc, --rules FILE)");
    return;
  }
  for (const l of layers) {
    ctx.out.line(`${l.source}${l.field ? ` ${l.field}` : ""}  mode ${l.mode} · default ${l.default}`);
    for (const r of l.rules) ctx.out.line(`  ${r.effect.padEnd(5)}  ${r.rule}${r.reason ? `  # ${r.reason}` : ""}`);
  }
}

/** The call a test is about: a shell command, or a tool with its input. */
function testCall(opts: { command?: string; tool?: string; input?: string }) {
  if ((opts.command === undefined) === (opts.tool === undefined)) {
    throw usageError("give --command CMD, or --tool NAME (with --input JSON)");
  }
  if (opts.command !== undefined) {
    return { kind: "tool", tool: "Bash", input: { command: opts.command }, command: opts.command };
  }
  let input: unknown = {};
  try {
    if (opts.input !== undefined) input = JSON.parse(opts.input);
  } catch (e) {
    throw usageError(`--input: not JSON: ${(e as Error).message}`);
  }
  if (typeof input !== "object" || input === null || Array.isArray(input)) throw usageError("--input: not an object");
  return { kind: "tool", tool: opts.tool!, input: input as Record<string, unknown>, command: JSON.stringify(input) };
}

/** A command as the rules read it: the innermost command of one unit, its words joined by spaces. */
function unitText(unit: CommandUnits["units"][number]): string {
  return unit.at(-1)!.map((w) => w.text).join(" ");
}

/** The files a shell line reads and writes, as `rules test` shows them (`whole`: a folder and all it holds). */
function shellFiles(command: string, cwd: string) {
  return fileAccesses(commandUnits(command), { cwd, home: homedir() }).map((a) => ({
    mode: a.mode,
    form: a.form,
    path: a.path,
    by: a.by,
    ...(a.tree ? { whole: true } : {}),
  }));
}

/** Registers `noema rules` and `noema rules test`. */
export function registerRules(program: CommandUnknownOpts, ctx: CliContext): void {
  const rules = program
    .command("rules")
    .summary("show the permission rules in effect here, or test them on a call")
    .description(
      "Show the rule sets (Claude Code permission-rule syntax) that runs and hooks started here apply: the user's\n" +
        "rules file, noema.jsonc's rules and rules_file, and --rules files, each checked (a bad rule: exit 2).",
    )
    .option("--rules <file>", "a rules file to add; repeatable", collect)
    .option("--json", "print the rule sets as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema rules", "the rule sets in effect here"],
        ['noema rules test --command "cd x && git push"', "what they decide about a shell command"],
      ) + "\nSee docs/rules.md.\n",
    )
    .action((opts) => {
      const layers = layersHere(ctx, opts.rules);
      if (opts.json) ctx.out.json(layers);
      else showLayers(ctx, layers);
    });
  rules
    .command("test")
    .summary("what the rules decide about one call, as JSON")
    .description(
      "Decide one call with the rule sets in effect here (as noema run would) and print, as JSON, the verdict,\n" +
        "each rule set's answer, and for a shell command the commands it was read as and the files it reads and writes.",
    )
    .option("-c, --command <command>", "a shell command (a Bash call)")
    .option("--tool <name>", "a tool call: its name (Edit, Read, WebFetch, mcp__srv__tool, run_shell_command…)")
    .option("--input <json>", 'the tool call\'s input, e.g. \'{"file_path": "/p/.env"}\'')
    .option("--rules <file>", "a rules file to add; repeatable", collect)
    .option("--workspace <dir>", "the directory relative paths start from (default: the current one)")
    .configureHelp({
      ...rules.configureHelp(),
      // `rules`' own --rules is this command's (listed once, above) and its --json does not apply: the output is JSON.
      visibleGlobalOptions(this: Help, cmd) {
        return Help.prototype.visibleGlobalOptions.call(this, cmd).filter((o) =>
          o.long !== "--rules" && o.long !== "--json"
        );
      },
    })
    .addHelpText(
      "after",
      examples(
        ['noema rules test --command "FOO=1 command git push"', "denied by Bash(git push:*): exit 3"],
        ['noema rules test --tool Read --input \'{"file_path": ".env"}\'', "a file rule"],
      ) +
        '\nOutput: {"effect": "allow" | "ask" | "deny", "audit", "advice", "target", "commands", "other_readings",\n' +
        '"files", "layers": [{source, field, mode, effect, rule, reason, note}]}. Exit codes: 0 allowed (or only\n' +
        "audited), 2 usage or a bad rule, 3 denied, 4 needs approval.\n",
    )
    .action((opts) => {
      const action = testCall(opts);
      const cwd = resolve(opts.workspace ?? process.cwd());
      // `--rules` after `rules` and before `test` belongs to the parent command.
      const layers = layersHere(ctx, [...(rules.opts().rules ?? []), ...(opts.rules ?? [])]);
      const target = ruleTarget(action, cwd);
      const verdict = rulesVerdict(layers, action, cwd);
      const shell = target?.tool === "Bash" ? commandUnits(target.command ?? "") : null;
      const effect = !verdict || verdict.audit ? "allow" : verdict.requires_approval ? "ask" : "deny";
      ctx.out.json({
        effect,
        audit: verdict?.audit === true,
        advice: verdict?.advice ?? null,
        target,
        commands: shell ? shell.units.map(unitText) : null,
        // What deny and ask rules also check (never allow rules): the other ways a wrapper's words may be read.
        other_readings: shell ? [...new Set(shell.alternates.map(unitText))] : null,
        files: target?.tool === "Bash" ? shellFiles(target.command ?? "", target.cwd ?? cwd) : null,
        layers: target === null ? [] : layers.map((l) => {
          const d = decideLayer(l, target, { cwd });
          return {
            source: l.source,
            field: l.field,
            mode: l.mode,
            ...d,
            rule: d.rule?.rule ?? null,
            reason: d.rule?.reason ?? null,
          };
        }),
      });
      ctx.exitCode = effect === "deny" ? EXIT.VETOED : effect === "ask" ? EXIT.PAUSED : EXIT.OK;
    });
}
