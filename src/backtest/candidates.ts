/**
 * The candidate policy set of a backtest: for each recorded episode, the
 * policies it recorded (its `start` event's `settings.policies`, in order),
 * with `--policy` files added (or replacing the recorded policy of the same
 * id), `--without` ids removed, and the rule sets of `Rules@1.0` changed by
 * `--rules` files (a file the episode recorded a rule set from is read again
 * in its place; another is added as one more rule set).
 *
 * A recorded policy file runs as it is on disk now (its code is not
 * recorded): when it hashes differently from the recorded run, the report
 * says so. Recorded rule sets are used as recorded. Files load once, in
 * their workers (`loadPolicyFile`), and are closed by {@link CandidateSet.close}.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { type LoadedPolicy, loadPolicyFile } from "../plugins/loader.ts";
import type { RunSettingsRecord } from "../runtime/core/options.ts";
import { loadRulesFile } from "../runtime/rules/load.ts";
import { adapterEnvOf, RULES_POLICY_ID, rulesPolicy } from "../runtime/rules/policy.ts";
import type { RuleLayer } from "../runtime/rules/schema.ts";
import { NoemaError } from "../errors.ts";

/** What changes from the recorded policies to the candidate set. */
export interface CandidateChanges {
  /** Policy files (`--policy`): added, or replacing the recorded policy of the same id. */
  policies?: readonly string[];
  /** Rules files (`--rules`): replacing the recorded rule set read from the same file, else added. */
  rules?: readonly string[];
  /** Policy ids (`--without`) left out of the candidate set (`Rules@1.0`: the recorded rule sets). */
  without?: readonly string[];
}

/** The candidate policies of one episode, or why the episode cannot be backtested. */
export type EpisodeCandidates =
  | { policies: LoadedPolicy[]; changed: string[]; skip?: undefined }
  | { skip: string; policies?: undefined; changed?: undefined };

/**
 * Loads the given files once and builds each episode's candidate set.
 *
 * @example
 * ```ts
 * import { CandidateSet } from "./candidates.ts";
 * const set = await CandidateSet.open({ rules: ["team-rules.jsonc"] });
 * // const c = await set.forEpisode(startEvent.payload.settings);
 * set.close();
 * ```
 */
export class CandidateSet {
  readonly #given: LoadedPolicy[];
  readonly #layers: RuleLayer[];
  readonly #without: Set<string>;
  readonly #files = new Map<string, Promise<LoadedPolicy | Error>>();
  readonly #rules = new Map<string, LoadedPolicy | null>();

  private constructor(given: LoadedPolicy[], layers: RuleLayer[], without: Set<string>) {
    this.#given = given;
    this.#layers = layers;
    this.#without = without;
  }

  /** Loads the `--policy` and `--rules` files (a bad one is a usage error naming it, exit 2). */
  static async open(changes: CandidateChanges): Promise<CandidateSet> {
    const layers = (changes.rules ?? []).map((f) => loadRulesFile(f));
    const given: LoadedPolicy[] = [];
    try {
      for (const f of changes.policies ?? []) given.push(await loadPolicyFile(f));
    } catch (e) {
      for (const p of given) p.close?.();
      throw e;
    }
    return new CandidateSet(given, layers, new Set(changes.without ?? []));
  }

  /** The ids of the given policy files, in order. */
  get givenIds(): string[] {
    return this.#given.map((p) => p.id);
  }

  /** The candidate policies for an episode recorded with these settings. */
  async forEpisode(rec: RunSettingsRecord): Promise<EpisodeCandidates> {
    const out: LoadedPolicy[] = [];
    const changed: string[] = [];
    const used = new Set<LoadedPolicy>();
    let rulesSeen = false;
    for (const p of rec.policies) {
      if (p.id === RULES_POLICY_ID && p.path === null) {
        rulesSeen = true;
        const rules = this.#rulesPolicy(rec, p.sha256);
        if (rules) out.push(rules);
        continue;
      }
      const given = this.#given.find((g) => g.id === p.id);
      if (given) {
        used.add(given);
        out.push(given);
        continue;
      }
      if (this.#without.has(p.id)) continue;
      const loaded = await this.#recorded(p);
      if (typeof loaded === "string") return { skip: loaded };
      if (loaded.sha256 !== p.sha256) changed.push(p.id);
      out.push(loaded);
    }
    // Rule sets given to an episode that had none: the rules come first, as in a run.
    if (!rulesSeen) {
      const rules = this.#rulesPolicy(rec, null);
      if (rules) out.unshift(rules);
    }
    for (const g of this.#given) if (!used.has(g)) out.push(g);
    return { policies: out, changed };
  }

  /** A recorded policy file, loaded once; a string says why it cannot be. */
  async #recorded(p: RunSettingsRecord["policies"][number]): Promise<LoadedPolicy | string> {
    const leave = `give it with --policy FILE, or leave it out with --without ${p.id}`;
    if (p.path === null) return `policy ${p.id} was given as an object (library API): ${leave}`;
    if (!existsSync(p.path)) return `policy ${p.id}: its file is gone: ${p.path} (${leave})`;
    const path = resolve(p.path);
    let loading = this.#files.get(path);
    if (!loading) {
      loading = loadPolicyFile(path).catch((e: unknown) => e instanceof Error ? e : new Error(String(e)));
      this.#files.set(path, loading);
    }
    const loaded = await loading;
    if (loaded instanceof Error) {
      const why = loaded instanceof NoemaError ? loaded.detail : loaded.message;
      return `policy ${p.id}: its file does not load: ${p.path}: ${why} (${leave})`;
    }
    if (loaded.id !== p.id) return `policy ${p.id}: its file is now policy ${loaded.id}: ${p.path} (${leave})`;
    return loaded;
  }

  /** The candidate `Rules@1.0` of an episode: its recorded rule sets changed by `--without` and `--rules`. */
  #rulesPolicy(rec: RunSettingsRecord, recordedSha: string | null): LoadedPolicy | null {
    const key = `${recordedSha}\0${rec.base_dir}`;
    if (this.#rules.has(key)) return this.#rules.get(key)!;
    const recorded = this.#without.has(RULES_POLICY_ID) || recordedSha === null ? [] : rec.rules ?? [];
    const fresh = [...this.#layers];
    const layers = recorded.map((l) => {
      const i = l.field === "" ? fresh.findIndex((f) => f.source === l.source) : -1;
      return i < 0 ? l : fresh.splice(i, 1)[0];
    });
    const policy = rulesPolicy([...layers, ...fresh], rec.base_dir, adapterEnvOf(rec.adapter));
    this.#rules.set(key, policy);
    return policy;
  }

  /** Closes every policy loaded (their workers go). */
  async close(): Promise<void> {
    for (const p of this.#given) p.close?.();
    for (const loading of this.#files.values()) {
      const p = await loading;
      if (!(p instanceof Error)) p.close?.();
    }
  }
}
