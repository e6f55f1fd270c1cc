/**
 * The `minimal` adapter (the default): completes each planned step without
 * side effects, as the reference system's minimal actuator does, so
 * `noema run "<task>"` works out of the box.
 *
 * @module
 */
import type { AdapterPlugin } from "../plugins/api.ts";

const minimal: AdapterPlugin = {
  name: "minimal",
  version: "1.0",
  api: "1.0",
  kind: "adapter",
  create: () => ({
    act: (request) => ({
      status: "ok",
      outcome: `Completed ${request.step.kind} step ${request.step.id}`,
      output: { step: request.step.id, kind: request.step.kind, side_effects: false },
    }),
  }),
};

export default minimal;
