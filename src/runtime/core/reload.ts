/**
 * Reloading a recorded episode's policies (files from their recorded paths,
 * checked against their recorded sha256; objects given again by the caller),
 * for `resume` and `EpisodeCore.attach`.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { EXIT, NoemaError } from "../../errors.ts";
import type { PolicyObject } from "../../plugins/api.ts";
import { type LoadedPolicy, loadPolicyFile, toLoadedPolicy } from "../../plugins/loader.ts";
import type { RunSettingsRecord } from "./options.ts";
import { RULES_POLICY_ID, rulesPolicy } from "../rules/policy.ts";

/**
 * A plugin-mismatch error (exit code 7).
 *
 * @example
 * ```ts
 * import { pluginMismatch } from "./reload.ts";
 * pluginMismatch("the policy file changed").exitCode;
 * ```
 */
export function pluginMismatch(message: string): NoemaError {
  return new NoemaError("plugin_mismatch", message, { exitCode: EXIT.PLUGIN_MISMATCH });
}

/**
 * The recorded episode's policies, reloaded; throws a plugin mismatch when a
 * file is gone or changed, or an object policy is not given again.
 *
 * @example
 * ```ts
 * import { reloadPolicies } from "./reload.ts";
 * // const policies = await reloadPolicies(startEvent.payload.settings, []);
 * ```
 */
export async function reloadPolicies(
  rec: RunSettingsRecord,
  given: readonly (PolicyObject | (new () => unknown))[] | undefined,
): Promise<LoadedPolicy[]> {
  const objects = (given ?? []).map((p, i) => toLoadedPolicy(p, `policies[${i}]`));
  const out: LoadedPolicy[] = [];
  for (const p of rec.policies) {
    if (p.path === null && p.id === RULES_POLICY_ID && rec.rules !== undefined) {
      const rules = rulesPolicy(rec.rules, rec.base_dir);
      if (!rules || rules.sha256 !== p.sha256) throw pluginMismatch(`policy ${p.id}: the recorded rules do not match`);
      out.push(rules);
      continue;
    }
    if (p.path === null) {
      const match = objects.find((o) => o.id === p.id);
      if (!match) throw pluginMismatch(`the run used policy ${p.id} as an object; pass it again to resume`);
      out.push(match);
      continue;
    }
    if (!existsSync(p.path)) throw pluginMismatch(`policy ${p.id}: its file is gone: ${p.path}`);
    const loaded = await loadPolicyFile(p.path);
    if (loaded.sha256 !== p.sha256 || loaded.id !== p.id) {
      throw pluginMismatch(`policy ${p.id}: the file changed since the run started: ${p.path}`);
    }
    out.push(loaded);
  }
  return out;
}
