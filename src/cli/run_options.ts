/**
 * The policy, governance and verification options that `noema run` and
 * `noema hook` share: their flags, help, choices and parsers, and their
 * mapping to {@link RunOptions} and to verification assertions. One place,
 * so the two commands cannot drift apart.
 *
 * The options come in groups that stand together in both commands' `--help`;
 * each `add…` function appends its group to a command and keeps commander's
 * inferred option types.
 *
 * @module
 */
import { type Command, Option, type OptionValues } from "@commander-js/extra-typings";
import type { RunOptions } from "../runtime/run.ts";
import { FAILURE_POLICIES, GOVERNANCE_MODES, LEARN_MODES, MAX_POLICY_TIMEOUT_MS } from "../runtime/settings.ts";
import { INTUITION_MODES } from "../schema/state.ts";
import { MODES } from "../schema/summary.ts";
import { collect, parseTags } from "./args.ts";
import { usageError } from "./errors.ts";
import { loadRulesFile } from "../runtime/rules/load.ts";

/**
 * A commander argParser for a number option: finite, within `[min, max]`,
 * whole if `integer`; anything else is a usage error naming the flag.
 *
 * @example
 * ```ts
 * import { numberOption } from "./run_options.ts";
 * numberOption("--seed", 0, 10, true)("7"); // 7
 * ```
 * @param max @default Infinity
 * @param integer @default false
 */
export function numberOption(flag: string, min: number, max = Infinity, integer = false): (value: string) => number {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
      throw usageError(
        `${flag} must be ${integer ? "an integer" : "a number"}${
          max < Infinity ? ` from ${min} to ${max}` : ` >= ${min}`
        }, got ${JSON.stringify(value)}`,
      );
    }
    return n;
  };
}

/**
 * Appends `--policy <file>` and `--rules <file>` (both repeatable).
 *
 * @example
 * ```ts
 * import { Command } from "@commander-js/extra-typings";
 * import { addPolicyOption } from "./run_options.ts";
 * addPolicyOption(new Command("run")).parse(["--policy", "a.ts"], { from: "user" }).opts().policy; // ["a.ts"]
 * ```
 */
export function addPolicyOption<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd
    .addOption(new Option("--policy <file>", "policy plugin (.ts); repeatable").argParser(collect))
    .addOption(
      new Option(
        "--rules <file>",
        "a rules file (JSONC: deny/ask/allow in Claude Code's permission-rule syntax, docs/rules.md); it only " +
          "tightens noema.jsonc's and the user's rules; repeatable",
      ).argParser(collect),
    );
}

/**
 * Appends `--mode`, `--intuition-mode`, `--governance` and `--failure-policy`.
 *
 * @example
 * ```ts
 * import { Command } from "@commander-js/extra-typings";
 * import { addModeOptions } from "./run_options.ts";
 * addModeOptions(new Command("run")).parse(["--governance", "advisory"], { from: "user" }).opts().governance;
 * ```
 */
export function addModeOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd
    .addOption(new Option("--mode <mode>", "execution mode (default meta)").choices(MODES))
    .addOption(
      new Option("--intuition-mode <mode>", "what verdicts may do (default interventive)").choices(INTUITION_MODES),
    )
    .addOption(new Option("--governance <mode>", "pre-act gate (default enforce)").choices(GOVERNANCE_MODES))
    .addOption(
      new Option("--failure-policy <policy>", "when a policy fails (default: fail_closed under enforce)").choices(
        FAILURE_POLICIES,
      ),
    );
}

/**
 * Appends `--policy-timeout <ms>` and `--learn <mode>`.
 *
 * @example
 * ```ts
 * import { Command } from "@commander-js/extra-typings";
 * import { addLimitOptions } from "./run_options.ts";
 * addLimitOptions(new Command("run")).parse(["--policy-timeout", "100"], { from: "user" }).opts().policyTimeout; // 100
 * ```
 */
export function addLimitOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
) {
  return cmd
    .addOption(
      new Option("--policy-timeout <ms>", "longest time a policy may take (default 5000)").argParser(
        numberOption("--policy-timeout", 1, MAX_POLICY_TIMEOUT_MS, true),
      ),
    )
    .addOption(new Option("--learn <mode>", "learning mode (default record)").choices(LEARN_MODES));
}

/**
 * Appends `--tag`, `--workspace` (with the command's own description), `--secret` and `--not-secret`.
 *
 * @example
 * ```ts
 * import { Command } from "@commander-js/extra-typings";
 * import { addMetaOptions } from "./run_options.ts";
 * addMetaOptions(new Command("run"), "the directory the adapter works in");
 * ```
 */
export function addMetaOptions<A extends unknown[], O extends OptionValues, G extends OptionValues>(
  cmd: Command<A, O, G>,
  workspaceHelp: string,
) {
  return cmd
    .addOption(new Option("--tag <key=value>", "user metadata; repeatable").argParser(collect))
    .addOption(new Option("--workspace <dir>", workspaceHelp))
    .addOption(
      new Option("--secret <NAME>", "environment variable whose value is masked in artifacts; repeatable").argParser(
        collect,
      ),
    )
    .addOption(
      new Option(
        "--not-secret <NAME>",
        "environment variable not to mask although its name says secret (*TOKEN*, *_KEY…); repeatable",
      ).argParser(collect),
    );
}

/**
 * `--verify-file-exists <path>` (repeatable); `when` says when it is checked.
 *
 * @example
 * ```ts
 * import { verifyFileExistsOption } from "./run_options.ts";
 * verifyFileExistsOption("after the run").long; // "--verify-file-exists"
 * ```
 */
export function verifyFileExistsOption(when: string) {
  return new Option("--verify-file-exists <path>", `assert the file exists ${when}; repeatable`).argParser(collect);
}

/**
 * `--verify-command <command>` (repeatable).
 *
 * @example
 * ```ts
 * import { verifyCommandOption } from "./run_options.ts";
 * verifyCommandOption().long; // "--verify-command"
 * ```
 */
export function verifyCommandOption() {
  return new Option("--verify-command <command>", "assert this shell command exits 0 in the workspace; repeatable")
    .argParser(collect);
}

/** The parsed values of the shared options (commander's camelCase names). */
export interface GateFlags {
  policy?: string[];
  rules?: string[];
  mode?: RunOptions["mode"];
  intuitionMode?: RunOptions["intuition_mode"];
  governance?: RunOptions["governance"];
  failurePolicy?: RunOptions["failure_policy"];
  policyTimeout?: number;
  learn?: RunOptions["learn_mode"];
  tag?: string[];
  secret?: string[];
  notSecret?: string[];
}

/**
 * Maps the shared options to run options (the workspace is the caller's:
 * its default differs between commands).
 *
 * @example
 * ```ts
 * import { gateRunOptions } from "./run_options.ts";
 * gateRunOptions({ policy: ["a.ts"], tag: ["team=infra"] }); // { policies: ["a.ts"], tags: { team: "infra" }, … }
 * ```
 */
export function gateRunOptions(opts: GateFlags): RunOptions {
  return {
    policies: opts.policy,
    rules: opts.rules?.map((f) => loadRulesFile(f)),
    mode: opts.mode,
    intuition_mode: opts.intuitionMode,
    governance: opts.governance,
    failure_policy: opts.failurePolicy,
    policy_timeout_ms: opts.policyTimeout,
    learn_mode: opts.learn,
    tags: parseTags(opts.tag),
    secrets: opts.notSecret ? [...(opts.secret ?? []), ...opts.notSecret.map((n) => `!${n}`)] : opts.secret,
  };
}

/**
 * Assertions given by the --verify-* flags, in a fixed order (after any
 * --verify-file entries); a command passes the flags it has.
 *
 * @example
 * ```ts
 * import { verifyFlags } from "./run_options.ts";
 * verifyFlags({ verifyFileExists: ["out.txt"], verifyCommand: ["make test"] });
 * // [{ kind: "file_exists", path: "out.txt" }, { kind: "command_succeeds", command: "make test" }]
 * ```
 */
export function verifyFlags(opts: {
  verifyFileExists?: string[];
  verifyFileAbsent?: string[];
  verifyFileContains?: string[];
  text?: string[];
  verifyOnlyModified?: string[];
  verifyNoModifications?: true;
  verifyCommand?: string[];
}): Record<string, unknown>[] {
  const specs: Record<string, unknown>[] = [];
  for (const path of opts.verifyFileExists ?? []) specs.push({ kind: "file_exists", path });
  for (const path of opts.verifyFileAbsent ?? []) specs.push({ kind: "file_absent", path });
  const contains = opts.verifyFileContains ?? [], texts = opts.text ?? [];
  if (contains.length !== texts.length) {
    throw usageError(
      `each --verify-file-contains needs one --text (got ${contains.length} paths and ${texts.length} texts)`,
    );
  }
  contains.forEach((path, i) => specs.push({ kind: "file_contains", path, text: texts[i] }));
  if (opts.verifyOnlyModified && opts.verifyNoModifications) {
    throw usageError("--verify-only-modified and --verify-no-modifications cannot be used together");
  }
  if (opts.verifyOnlyModified) specs.push({ kind: "only_modified", paths: opts.verifyOnlyModified });
  if (opts.verifyNoModifications) specs.push({ kind: "no_modifications" });
  for (const command of opts.verifyCommand ?? []) specs.push({ kind: "command_succeeds", command });
  return specs;
}
