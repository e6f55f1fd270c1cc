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
import { adapterEnvOf, RULES_POLICY_ID, rulesPolicy } from "../rules/policy.ts";
import { rereadRuleLayers } from "../rules/load.ts";
import type { RuleLayer } from "../rules/schema.ts";

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
 * The recorded rules as a policy: as recorded, or, when the record masked part of a rule (it looked like a secret),
 * read again from their files, provided they still hash as they did when the run started.
 */
function reloadRules(
  layers: RuleLayer[],
  baseDir: string,
  sha256: string | null,
  env: Record<string, string>,
): LoadedPolicy {
  const recorded = rulesPolicy(layers, baseDir, env);
  if (recorded && recorded.sha256 === sha256) return recorded;
  let fresh: LoadedPolicy | null = null;
  try {
    fresh = rulesPolicy(rereadRuleLayers(layers), baseDir, env);
  } catch {
    // a file gone or broken: the mismatch below says so
  }
  if (fresh && fresh.sha256 === sha256) return fresh;
  const files = [...new Set(layers.map((l) => l.source))].join(", ");
  throw pluginMismatch(`policy ${RULES_POLICY_ID}: the rules changed since the run started (${files})`);
}

/**
 * A stand-in for a policy given as an object that is not given again, where nothing will act (rejecting or aborting
 * a run: an MCP gateway's episode after its process died). Should it be asked anyway, it vetoes.
 */
function standIn(id: string): LoadedPolicy {
  const at = id.lastIndexOf("@");
  return {
    id,
    name: at > 0 ? id.slice(0, at) : id,
    version: at > 0 ? id.slice(at + 1) : "",
    path: null,
    sha256: null,
    advise: () => ({ kind: "veto", advice: `policy ${id} was not given again: nothing runs`, confidence: 1 }),
  };
}

/**
 * The recorded episode's policies, reloaded; throws a plugin mismatch when a
 * file is gone or changed, or an object policy is not given again (unless
 * `acts` is false: then nothing will act, and a stand-in takes its place).
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
  acts = true,
): Promise<LoadedPolicy[]> {
  const objects = (given ?? []).map((p, i) => toLoadedPolicy(p, `policies[${i}]`));
  const out: LoadedPolicy[] = [];
  for (const p of rec.policies) {
    if (p.path === null && p.id === RULES_POLICY_ID && rec.rules !== undefined) {
      out.push(reloadRules(rec.rules, rec.base_dir, p.sha256, adapterEnvOf(rec.adapter)));
      continue;
    }
    if (p.path === null) {
      const match = objects.find((o) => o.id === p.id);
      if (!match && acts) throw pluginMismatch(`the run used policy ${p.id} as an object; pass it again to resume`);
      out.push(match ?? standIn(p.id));
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
