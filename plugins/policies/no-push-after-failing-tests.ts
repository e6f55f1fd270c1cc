/**
 * NoPushAfterFailingTests: a sequence rule. It vetoes a `git push` when the
 * last test run among the earlier actions (`state.outcomes.actions`) failed,
 * and lets it go again once a later test run passed.
 *
 * A test run is a shell call whose command runs a test runner (`npm test`,
 * `bun test`, `deno test`, `pytest`, `go test`, `cargo test`, `make test`,
 * `jest`, `vitest`, `node --test`…); it failed when its result status is
 * `error` or its exit code is not 0.
 *
 * @module
 */
import { DirectedIntuition, type PolicyState } from "noema";

/** Commands that run tests. */
export const TEST_COMMAND =
  /\b(npm|pnpm|yarn|bun)\s+(run\s+)?test\b|\bdeno\s+test\b|\bpytest\b|\bpython3?\s+-m\s+(pytest|unittest)\b|\bgo\s+test\b|\bcargo\s+test\b|\bmake\s+(check|test)\b|\b(jest|vitest|mocha|rspec)\b|\bnode\s+--test\b/;
/** `git push`, with options before it (`git -C dir push`), within one command of a compound line. */
const PUSH = /\bgit\b[^|;&\n]*?\spush\b/;

type Action = PolicyState["outcomes"]["actions"][number];

/** The command an action record ran, from its input (or its input excerpt). */
function commandOf(a: Action): string {
  const input = (a as { input?: unknown }).input as Record<string, unknown> | undefined;
  if (input && typeof input.command === "string") return input.command;
  if (input && Array.isArray(input.argv)) return input.argv.join(" ");
  return String(a.input_excerpt ?? "");
}

/**
 * Whether a test run failed: an error result, or an output whose exit code is not 0 (read from the output's
 * text too: on a long episode the state keeps a big output as an excerpt).
 */
function failed(a: Action): boolean {
  if (a.result_status === "error") return true;
  const out = (a as { output?: unknown }).output as Record<string, unknown> | null | undefined;
  const code = out && typeof out === "object" ? (out.exit_code ?? out.exitCode ?? out.code) : undefined;
  if (typeof code === "number") return code !== 0;
  return /\\?"exit_?code\\?"\s*:\s*[1-9]/i.test(JSON.stringify(out ?? null) ?? "");
}

export default class NoPushAfterFailingTests extends DirectedIntuition {
  static override version = "1.0";

  advise(state: PolicyState) {
    if (!PUSH.test(state.action.command)) return;
    const tests = state.outcomes.actions.filter((a) =>
      a.result_status !== "skipped" && TEST_COMMAND.test(commandOf(a))
    );
    const last = tests.at(-1);
    if (!last || !failed(last)) return;
    return this.veto({
      advice: `no push after a failing test run: the last one (${commandOf(last).slice(0, 80)}) failed; ` +
        "make the tests pass first",
      confidence: 0.95,
      risk_tags: ["push_after_failing_tests"],
    });
  }
}
