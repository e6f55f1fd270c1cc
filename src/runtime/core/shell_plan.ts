/**
 * What the `shell` adapter needs of a plan, checked before the run starts:
 * every `act` step gives `inputs.command` or `inputs.argv`, unless there are
 * arguments after `--` (they are the command of the steps that give none),
 * and a step's `inputs.timeout_ms` is one a timer can wait.
 * A step without one is a usage error (exit 2) with nothing written, as the
 * `command` adapter without a command is, not an episode that ends in a
 * `ConfigError`.
 *
 * @module
 */
import { EXIT, NoemaError } from "../../errors.ts";
import { adapterNumberProblem } from "../adapter_keys.ts";
import { jsonType } from "../../json.ts";

/** The part of a planned step the check reads. */
interface StepLike {
  id: string;
  kind: string;
  inputs?: Record<string, unknown>;
}

/** Whether a step's inputs give the shell adapter something to run (as the adapter reads them). */
/**
 * Refuses a step whose `inputs.command` or `inputs.argv` is there but of the wrong type (it was said to have none),
 * naming the field (`steps[i].inputs.command`: the CLI adds the task file's line).
 */
function checkInputTypes(s: StepLike, i: number): void {
  const inputs = s.inputs;
  const wrong = (key: string, what: string, got: unknown) =>
    new NoemaError("usage", `adapter shell: step ${s.id}: ${what}, got ${jsonType(got)}`, {
      field: `steps[${i}].inputs.${key}`,
      exitCode: EXIT.USAGE,
    });
  if (inputs?.command !== undefined && typeof inputs.command !== "string") {
    throw wrong("command", "the shell command must be a string", inputs.command);
  }
  const argv = inputs?.argv;
  if (argv === undefined) return;
  if (!Array.isArray(argv)) {
    throw wrong("argv", "argv must be a list of strings (the program, then its arguments)", argv);
  }
  const bad = argv.findIndex((a) => typeof a !== "string");
  if (bad >= 0) throw wrong(`argv[${bad}]`, "each word of argv must be a string", argv[bad]);
}

function hasCommand(inputs: Record<string, unknown> | undefined): boolean {
  const argv = inputs?.argv;
  return typeof inputs?.command === "string" || (Array.isArray(argv) && argv.every((s) => typeof s === "string"));
}

/**
 * Throws a usage error naming the first `act` step the shell adapter would
 * have nothing to run for (no `inputs.command` or `inputs.argv`, and no
 * arguments after `--`).
 *
 * @example
 * ```ts
 * import { checkShellPlan } from "./shell_plan.ts";
 * checkShellPlan([{ id: "step-2", kind: "act", inputs: { command: "ls" } }], []); // fine
 * checkShellPlan([{ id: "step-2", kind: "act" }], ["ls"]); // fine: the arguments are its command
 * // checkShellPlan([{ id: "step-2", kind: "act" }], []); // throws: step step-2 has no inputs.command …
 * ```
 */
export function checkShellPlan(steps: readonly StepLike[], args: readonly string[]): void {
  steps.forEach(checkInputTypes);
  for (const s of steps) {
    const problem = s.inputs?.timeout_ms === undefined ? null : adapterNumberProblem("timeout_ms", s.inputs.timeout_ms);
    if (problem) {
      throw new NoemaError("usage", `adapter shell: step ${s.id}: inputs.timeout_ms ${problem}`, {
        exitCode: EXIT.USAGE,
      });
    }
  }
  if (args.length > 0) return;
  const step = steps.find((s) => s.kind === "act" && !hasCommand(s.inputs));
  if (step === undefined) return;
  throw new NoemaError(
    "usage",
    `adapter shell: step ${step.id} has no inputs.command or inputs.argv: give it one in the task file, ` +
      `or the command after --: noema run "<task>" --using shell -- <command> [args…]`,
    { exitCode: EXIT.USAGE },
  );
}
