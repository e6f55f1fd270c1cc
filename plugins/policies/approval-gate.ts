/**
 * ApprovalGate: asks a human to approve risky steps before they run — steps
 * whose kind is `review`, steps marked `inputs.risky: true`, and commands
 * that deploy, push, publish, delete or migrate.
 *
 * Written as a plain object with no imports, to show that a policy file needs
 * nothing from noema.
 *
 * @module
 */
const RISKY =
  /\b(deploy|push|publish|release|rm\s+-rf|delete|drop|migrate|terraform\s+apply|kubectl\s+(apply|delete))\b/i;

export default {
  name: "ApprovalGate",
  version: "1.0",
  api: "1.0",
  advise(
    state: {
      step: { kind: string; inputs: Readonly<Record<string, unknown>> };
      action: { command: string };
    },
  ) {
    // action.command: input.command, or argv joined with shell quoting (what will run, as one line).
    const command = state.action.command;
    const risky = state.step.kind === "review" || state.step.inputs.risky === true || RISKY.test(command);
    if (!risky) return undefined;
    return {
      kind: "veto" as const,
      advice: `Approval required before this step: ${command || state.step.kind}`,
      confidence: 0.9,
      requires_approval: true,
      risk_tags: ["needs_approval"],
    };
  },
};
