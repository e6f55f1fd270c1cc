/**
 * `noema completions bash|zsh|fish`: a shell completion script generated
 * from the program's own command tree, so new commands and options are
 * covered without editing this file. Episode ids are completed from
 * `$NOEMA_ROOT/episodes` (or `--root`, else `./.noema`).
 *
 * @module
 */
import { Argument, type CommandUnknownOpts, Help, type Option } from "@commander-js/extra-typings";
import { type CliContext, examples } from "../context.ts";

/** Shells with a generator. */
export const SHELLS = ["bash", "zsh", "fish"] as const;
/** A supported shell. */
export type Shell = (typeof SHELLS)[number];

/** What completes the value of an option or an argument. */
type ValueKind = { type: "none" } | { type: "dirs" } | { type: "files" } | { type: "episodes"; files: boolean } | {
  type: "commands";
} | {
  type: "choices";
  values: readonly string[];
};

/** One option in the tree. */
interface OptSpec {
  long?: string;
  short?: string;
  description: string;
  /** Null when the option takes no value. */
  value: ValueKind | null;
}

/** One command in the tree. */
interface CmdSpec {
  name: string;
  aliases: string[];
  description: string;
  options: OptSpec[];
  /** Completion of the positional arguments (first one only matters in practice). */
  args: ValueKind[];
}

/** The program as data. */
export interface CompletionTree {
  name: string;
  globals: OptSpec[];
  commands: CmdSpec[];
}

function optValue(o: Option): ValueKind | null {
  if (!o.required && !o.optional) return null;
  if (o.argChoices) return { type: "choices", values: o.argChoices };
  // The value's placeholder says what it is: <dir>, <path>, <file>, …
  const placeholder = /[<[]([^>\]]+)[>\]]/.exec(o.flags)?.[1].toLowerCase() ?? "";
  if (/^(dir|directory|root)$/.test(placeholder)) return { type: "dirs" };
  if (/^(path|file|files)$/.test(placeholder)) return { type: "files" };
  return { type: "none" };
}

function argValue(a: Argument): ValueKind {
  if (a.argChoices) return { type: "choices", values: a.argChoices };
  const name = a.name();
  if (name === "episode") return { type: "episodes", files: false };
  if (name === "target") return { type: "episodes", files: true };
  if (name === "command") return { type: "commands" };
  return { type: "none" };
}

function optSpec(o: Option): OptSpec {
  const spec: OptSpec = { description: o.description, value: optValue(o) };
  if (o.long) spec.long = o.long;
  if (o.short) spec.short = o.short;
  return spec;
}

/**
 * Reads the command tree of a program: commands (with the built-in `help`),
 * their options and arguments, and the global options.
 *
 * @example
 * ```ts
 * // completionTree(program).commands.map((c) => c.name) // ["state", "summary", "list", …, "help"]
 * ```
 */
export function completionTree(program: CommandUnknownOpts): CompletionTree {
  const help = new Help();
  return {
    name: program.name(),
    globals: help.visibleOptions(program).map(optSpec),
    commands: help.visibleCommands(program).map((cmd) => ({
      name: cmd.name(),
      aliases: [...cmd.aliases()],
      description: (cmd.summary() || cmd.description()).split("\n")[0],
      options: help.visibleOptions(cmd).map(optSpec),
      args: cmd.registeredArguments.map(argValue),
    })),
  };
}

const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const words = (o: OptSpec) => [o.short, o.long].filter((x): x is string => x !== undefined);

function bashValue(v: ValueKind, commandNames: string): string {
  switch (v.type) {
    case "dirs":
      return `COMPREPLY=($(compgen -d -- "$cur"))`;
    case "files":
      return `COMPREPLY=($(compgen -f -- "$cur"))`;
    case "episodes":
      return v.files
        ? `COMPREPLY=($(compgen -W "$(_noema_episodes)" -- "$cur") $(compgen -f -- "$cur"))`
        : `COMPREPLY=($(compgen -W "$(_noema_episodes)" -- "$cur"))`;
    case "commands":
      return `COMPREPLY=($(compgen -W ${sq(commandNames)} -- "$cur"))`;
    case "choices":
      return `COMPREPLY=($(compgen -W ${sq(v.values.join(" "))} -- "$cur"))`;
    case "none":
      return "COMPREPLY=()";
  }
}

function bash(t: CompletionTree): string {
  const fn = `_${t.name.replace(/\W/g, "_")}`;
  const commandNames = t.commands.flatMap((c) => [c.name, ...c.aliases]).join(" ");
  const globalWords = t.globals.flatMap(words).join(" ");
  const valueOpts = (opts: OptSpec[]) => opts.filter((o) => o.value !== null);
  const allValueWords = [
    ...new Set([...t.globals, ...t.commands.flatMap((c) => c.options)].filter((o) => o.value).flatMap(words)),
  ];
  const prevCases = (opts: OptSpec[], indent: string) =>
    valueOpts(opts).map((o) => `${indent}${words(o).join("|")}) ${bashValue(o.value!, commandNames)}; return ;;`).join(
      "\n",
    );
  const cmdCases = t.commands.map((c) => {
    const optWords = [...new Set([...c.options.flatMap(words), ...t.globals.flatMap(words)])].join(" ");
    const arg = c.args[0] ?? { type: "none" };
    return [
      `    ${[c.name, ...c.aliases].join("|")})`,
      `      case "$prev" in`,
      prevCases(c.options, "        "),
      `      esac`,
      `      if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W ${sq(optWords)} -- "$cur"))`,
      `      elif [[ $nargs -eq 0 ]]; then ${bashValue(arg, commandNames)}`,
      `      fi ;;`,
    ].filter((l) => l.trim() !== "").join("\n");
  }).join("\n");
  return `# bash completion for ${t.name} (generated by '${t.name} completions bash')
# Install: ${t.name} completions bash > ~/.local/share/bash-completion/completions/${t.name}
_noema_episodes() {
  local root="\${NOEMA_ROOT:-.noema}" i
  for ((i = 1; i < \${#COMP_WORDS[@]}; i++)); do
    if [[ "\${COMP_WORDS[i]}" == --root ]]; then root="\${COMP_WORDS[i+1]}"; fi
  done
  [[ -d "$root/episodes" ]] && command ls -1 "$root/episodes" 2>/dev/null
}
${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  local cmd="" nargs=0 i w
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    case "$w" in
      ${allValueWords.join("|") || "--__none__"}) ((i++)) ;;
      -*) ;;
      *) if [[ -z "$cmd" ]]; then cmd="$w"; else ((nargs++)); fi ;;
    esac
  done
  case "$prev" in
${prevCases(t.globals, "    ")}
  esac
  case "$cmd" in
    "")
      if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W ${sq(globalWords)} -- "$cur"))
      else COMPREPLY=($(compgen -W ${sq(commandNames)} -- "$cur")); fi ;;
${cmdCases}
  esac
}
complete -F ${fn} ${t.name}
`;
}

/** Escapes text for a zsh `_arguments` spec in single quotes. */
function zq(s: string): string {
  return s.replace(/'/g, `'\\''`).replace(/([[\]:])/g, "\\$1");
}

function zshAction(v: ValueKind | null): string {
  if (v === null) return "";
  switch (v.type) {
    case "dirs":
      return ":dir:_files -/";
    case "files":
      return ":file:_files";
    case "episodes":
      return v.files ? ":target:_noema_targets" : ":episode:_noema_episodes";
    case "commands":
      return ":command:_noema_commands";
    case "choices":
      return `:value:(${v.values.join(" ")})`;
    case "none":
      return ":value: ";
  }
}

function zshOpt(o: OptSpec): string {
  const action = zshAction(o.value);
  const desc = `[${zq(o.description)}]`;
  if (o.short && o.long) return `'(${o.short} ${o.long})'{${o.short},${o.long}}'${desc}${action}'`;
  return `'${(o.long ?? o.short)!}${desc}${action}'`;
}

function zsh(t: CompletionTree): string {
  const cmds = t.commands.flatMap((c) =>
    [c.name, ...c.aliases].map((n) => `'${n.replace(/:/g, "\\:")}:${c.description.replace(/'/g, `'\\''`)}'`)
  );
  const cases = t.commands.map((c) => {
    const specs = [...c.options.map(zshOpt), ...c.args.map((a, i) => `'${i + 1}${zshAction(a) || ": :"}'`)];
    return `      (${[c.name, ...c.aliases].join("|")})\n        _arguments -s \\\n          ${
      specs.join(" \\\n          ")
    } ;;`;
  }).join("\n");
  return `#compdef ${t.name}
# zsh completion for ${t.name} (generated by '${t.name} completions zsh')
# Install: ${t.name} completions zsh > "\${fpath[1]}/_${t.name}"  (or: source <(${t.name} completions zsh))
_noema_episodes() {
  local root=\${NOEMA_ROOT:-.noema}
  local -a eps
  (( \${words[(I)--root]} )) && root=\${words[\${words[(I)--root]}+1]}
  eps=(\${root}/episodes/*(N/:t))
  _describe -t episodes 'episode' eps
}
_noema_targets() {
  _alternative 'episodes:episode:_noema_episodes' 'files:file:_files'
}
_noema_commands() {
  local -a cmds
  cmds=(
    ${cmds.join("\n    ")}
  )
  _describe -t commands 'command' cmds
}
_${t.name}() {
  local curcontext="$curcontext" state line
  typeset -A opt_args
  _arguments -C \\
    ${t.globals.map(zshOpt).join(" \\\n    ")} \\
    '1: :_noema_commands' \\
    '*:: :->args'
  case $state in
    (args)
      case $line[1] in
${cases}
      esac ;;
  esac
}
if [[ "\${funcstack[1]}" == "_${t.name}" ]]; then
  _${t.name} "$@"
else
  compdef _${t.name} ${t.name}
fi
`;
}

function fishValue(v: ValueKind | null): string {
  if (v === null) return "";
  switch (v.type) {
    case "dirs":
    case "files":
      return " -r -F";
    case "episodes":
      return v.files ? " -F -a '(__noema_episodes)'" : " -a '(__noema_episodes)'";
    case "commands":
      return " -a '(__noema_commands)'";
    case "choices":
      return ` -r -f -a ${sq(v.values.join(" "))}`;
    case "none":
      return " -r";
  }
}

function fishOpt(name: string, o: OptSpec, condition: string): string {
  const flags = [o.short && `-s ${o.short.slice(1)}`, o.long && `-l ${o.long.slice(2)}`].filter(Boolean).join(" ");
  return `complete -c ${name}${condition} ${flags} -d ${sq(o.description)}${fishValue(o.value)}`;
}

function fish(t: CompletionTree): string {
  const names = t.commands.flatMap((c) => [c.name, ...c.aliases]);
  const lines = [
    `# fish completion for ${t.name} (generated by '${t.name} completions fish')`,
    `# Install: ${t.name} completions fish > ~/.config/fish/completions/${t.name}.fish`,
    `function __noema_episodes`,
    `    set -l root .noema`,
    `    set -q NOEMA_ROOT; and test -n "$NOEMA_ROOT"; and set root $NOEMA_ROOT`,
    `    set -l toks (commandline -opc)`,
    `    set -l i (contains -i -- --root $toks); and set root $toks[(math $i + 1)]`,
    `    test -d $root/episodes; and command ls -1 $root/episodes 2>/dev/null`,
    `end`,
    `function __noema_commands`,
    ...t.commands.flatMap((c) =>
      [c.name, ...c.aliases].map((n) => `    printf '%s\\t%s\\n' ${sq(n)} ${sq(c.description)}`)
    ),
    `end`,
    `complete -c ${t.name} -f`,
    ...t.commands.flatMap((c) =>
      [c.name, ...c.aliases].map((n) =>
        `complete -c ${t.name} -n 'not __fish_seen_subcommand_from ${names.join(" ")}' -a ${sq(n)} -d ${
          sq(c.description)
        }`
      )
    ),
    ...t.globals.map((o) => fishOpt(t.name, o, "")),
  ];
  for (const c of t.commands) {
    const cond = ` -n '__fish_seen_subcommand_from ${[c.name, ...c.aliases].join(" ")}'`;
    for (const o of c.options) {
      if (t.globals.some((g) => g.long === o.long)) continue;
      lines.push(fishOpt(t.name, o, cond));
    }
    const arg = c.args[0];
    if (arg && arg.type !== "none") lines.push(`complete -c ${t.name}${cond}${fishValue(arg)}`);
  }
  return lines.join("\n") + "\n";
}

/**
 * A completion script for a shell, generated from the program tree.
 *
 * @example
 * ```ts
 * // completionScript(program, "bash") // "# bash completion for noema …"
 * ```
 */
export function completionScript(program: CommandUnknownOpts, shell: Shell): string {
  const tree = completionTree(program);
  return shell === "bash" ? bash(tree) : shell === "zsh" ? zsh(tree) : fish(tree);
}

/** Registers `noema completions`. */
export function registerCompletions(program: CommandUnknownOpts, ctx: CliContext): void {
  program
    .command("completions")
    .summary("print a shell completion script")
    .description("Print a completion script for bash, zsh or fish, generated from the command tree.")
    .addArgument(new Argument("<shell>", "the shell").choices(SHELLS))
    .addHelpText(
      "after",
      examples(
        ["source <(noema completions bash)", "enable in the current bash"],
        ['noema completions zsh > "${fpath[1]}/_noema"', "install for zsh"],
        ["noema completions fish > ~/.config/fish/completions/noema.fish", "install for fish"],
      ),
    )
    .action((shell) => {
      ctx.out.stdout.write(completionScript(program, shell));
    });
}
