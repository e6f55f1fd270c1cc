/**
 * The `checklist` planner: turns a task written as a list ("a; b; c" or
 * "a, then b, then c") into one act step per item, between a detect step and
 * a verify step.
 *
 *     noema run "build the site; run the link checker; publish" --planner plugins/planners/checklist.ts
 *
 * @module
 */
import type { Planner } from "noema";

const checklist: Planner = {
  name: "checklist",
  plan({ task }) {
    const items = task.split(/\s*;\s*|,?\s+then\s+/i).map((s) => s.trim()).filter((s) => s !== "");
    return {
      source: "planner:checklist",
      rationale: `One act step per item of the task (${items.length}).`,
      steps: [
        { id: "step-1", kind: "detect", description: "Collect relevant context", status: "pending" },
        ...items.map((item, i) => ({
          id: `step-${i + 2}`,
          kind: "act" as const,
          description: item,
          status: "pending" as const,
        })),
        { id: `step-${items.length + 2}`, kind: "verify", description: "Verify every item is done", status: "pending" },
      ],
    };
  },
};

export default checklist;
