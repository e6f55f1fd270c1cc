/**
 * A policy written only from the contract (`state.goal.task`,
 * `state.plan.steps[].status`, `state.outcomes.actions`,
 * `state.episode.intuition_mode`, `state.action.command`), with no import: it
 * reports what it saw in a hint's advice (JSON), including every object or
 * array it can reach that `Object.isFrozen` says is not frozen, and vetoes
 * `rm -rf`.
 *
 * @module
 */

/** The policy file's source. */
export const CONTRACT_POLICY_SOURCE = `export default {
  name: "ContractProbe",
  version: "1.0",
  advise(state) {
    const throws = (f) => {
      try {
        f();
        return false;
      } catch (e) {
        return e instanceof TypeError;
      }
    };
    const threw = throws(() => (state.plan.steps[0].status = "tampered")) &&
      throws(() => state.outcomes.actions.push({})) && throws(() => (state.goal.task = "x")) &&
      throws(() => (state.plan.steps.length = 0)) && throws(() => delete state.memory.facts);
    // Every object and array reachable from the state, by path, that Object.isFrozen says is not frozen.
    const unfrozen = [];
    const walk = (x, path, seen) => {
      if (typeof x !== "object" || x === null || seen.has(x)) return;
      seen.add(x);
      if (!Object.isFrozen(x)) unfrozen.push(path);
      for (const k of Object.keys(x)) walk(x[k], path + "." + k, seen);
    };
    walk(state, "state", new Set());
    const seen = {
      version: state.version,
      state_schema_version: state.state_schema_version,
      task: state.goal.task,
      statuses: state.plan.steps.map((s) => s.status),
      actions: state.outcomes.actions.map((a) => a.result_status),
      intuition_mode: state.episode.intuition_mode,
      links: state.links.events,
      beliefs: state.beliefs.length,
      facts: state.memory.facts.length,
      command: state.action.command,
      index: state.step.index,
      total: state.step.total,
      frozen: [state, state.plan, state.plan.steps[0], state.outcomes, state.memory, state.episode, state.goal, state.action]
        .every((x) => Object.isFrozen(x)) && state.outcomes.actions.every((a) => Object.isFrozen(a)) &&
        Array.isArray(state.plan.steps) && Array.isArray(state.outcomes.actions),
      threw,
      unfrozen,
      // Freezing what is frozen already is allowed (and changes nothing), as on any frozen array.
      refreeze: !throws(() => Object.freeze(state.plan.steps)) && Object.isFrozen(state.outcomes.actions),
    };
    if (/rm -rf/.test(state.action.command)) return { kind: "veto", advice: JSON.stringify(seen), confidence: 0.9 };
    return { kind: "hint", advice: JSON.stringify(seen) };
  },
};
`;
