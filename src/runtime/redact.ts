/**
 * Masking secrets before anything reaches an artifact: the values of
 * environment variables named as secrets, and common token shapes.
 *
 * @module
 */
import process from "node:process";

/** The mask that replaces a token found by pattern. A named secret's value becomes `[REDACTED:<NAME>]`. */
export const MASK = "[REDACTED]";

const NAMED_MASK = /\[REDACTED:([A-Za-z_][A-Za-z0-9_]*)\]/g;

/** Common token shapes masked even when not named. */
export const TOKEN_PATTERNS: readonly { name: string; pattern: RegExp }[] = [
  { name: "openai_key", pattern: /\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}/g },
  { name: "anthropic_key", pattern: /\bsk-ant-[A-Za-z0-9_-]{20,}/g },
  { name: "github_token", pattern: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}/g },
  { name: "aws_access_key", pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  { name: "slack_token", pattern: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g },
  { name: "bearer_token", pattern: /\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*/g },
  { name: "private_key", pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g },
];

/** One pattern matching any of {@link TOKEN_PATTERNS}: a cheap first test before the per-pattern pass. */
const ANY_TOKEN = new RegExp(TOKEN_PATTERNS.map((t) => t.pattern.source).join("|"));

/** What a {@link Redactor} masked in one value. */
export interface RedactionReport {
  /** True when anything was masked. */
  applied: boolean;
  /** How many occurrences were masked. */
  masked: number;
  /** Names of the secret variables whose values were found. */
  secrets: string[];
  /** Names of the token patterns that matched. */
  patterns: string[];
  /** Dotted paths of the fields that were changed. */
  fields: string[];
}

/**
 * Masks secrets in strings and in JSON values.
 *
 * @example
 * ```ts
 * import { Redactor } from "noema";
 * const r = new Redactor({ secrets: ["API_TOKEN"], env: { API_TOKEN: "hunter2hunter2" } });
 * r.redact({ cmd: "curl -H 'x: hunter2hunter2'" }).value; // { cmd: "curl -H 'x: [REDACTED:API_TOKEN]'" }
 * ```
 */
export class Redactor {
  readonly #values: { name: string; value: string }[];

  readonly #env: Record<string, string | undefined>;
  readonly #names: Set<string>;

  constructor(options: { secrets?: readonly string[]; env?: Record<string, string | undefined> } = {}) {
    const env = options.env ?? process.env;
    this.#env = env;
    this.#names = new Set(options.secrets ?? []);
    this.#values = (options.secrets ?? [])
      .map((name) => ({ name, value: env[name] ?? "" }))
      // Very short values would mask ordinary text; they are not treated as secrets.
      .filter((s) => s.value.length >= 4)
      .sort((a, b) => b.value.length - a.value.length);
  }

  /** Masks one string; `report` (when given) is updated. */
  redactString(text: string, report?: RedactionReport, field = ""): string {
    let out = text;
    let changed = false;
    for (const s of this.#values) {
      if (out.includes(s.value)) {
        const parts = out.split(s.value);
        if (report) {
          report.masked += parts.length - 1;
          if (!report.secrets.includes(s.name)) report.secrets.push(s.name);
        }
        out = parts.join(`[REDACTED:${s.name}]`);
        changed = true;
      }
    }
    for (const { name, pattern } of ANY_TOKEN.test(out) ? TOKEN_PATTERNS : []) {
      pattern.lastIndex = 0;
      if (!pattern.test(out)) continue;
      pattern.lastIndex = 0;
      out = out.replace(pattern, () => {
        if (report) {
          report.masked++;
          if (!report.patterns.includes(name)) report.patterns.push(name);
        }
        return MASK;
      });
      changed = true;
    }
    if (changed && report) {
      report.applied = true;
      if (!report.fields.includes(field)) report.fields.push(field);
    }
    return out;
  }

  /**
   * Puts the values of named secrets back (from the environment) where
   * `[REDACTED:<NAME>]` stands, for a resumed run that must act with the real
   * values. `unresolved` lists masks that cannot be restored: a token found by
   * pattern, or a named secret that is not set now.
   */
  unmask<T>(value: T): { value: T; unresolved: string[] } {
    const unresolved: string[] = [];
    const env = this.#env;
    const walk = (v: unknown): unknown => {
      if (typeof v === "string") {
        if (!v.includes("[REDACTED")) return v;
        const out = v.replace(NAMED_MASK, (m, name: string) => {
          const real = this.#names.has(name) ? env[name] : undefined;
          if (real === undefined) unresolved.push(m);
          return real ?? m;
        });
        if (out.includes(MASK)) unresolved.push(MASK);
        return out;
      }
      if (Array.isArray(v)) return v.map(walk);
      if (typeof v === "object" && v !== null) {
        return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
      }
      return v;
    };
    return { value: walk(value) as T, unresolved: [...new Set(unresolved)] };
  }

  /**
   * Masks every string in a JSON value (keys too). Returns a new value only
   * where something changed, and a report of what was masked.
   */
  redact<T>(value: T, path = ""): { value: T; report: RedactionReport } {
    const report: RedactionReport = { applied: false, masked: 0, secrets: [], patterns: [], fields: [] };
    return { value: this.#walk(value, report, path) as T, report };
  }

  #walk(value: unknown, report: RedactionReport, path: string): unknown {
    if (typeof value === "string") return this.redactString(value, report, path);
    if (Array.isArray(value)) {
      let copy: unknown[] | undefined;
      value.forEach((item, i) => {
        const next = this.#walk(item, report, `${path}[${i}]`);
        if (next !== item) (copy ??= [...value])[i] = next;
      });
      return copy ?? value;
    }
    if (typeof value === "object" && value !== null) {
      let copy: Record<string, unknown> | undefined;
      for (const [k, item] of Object.entries(value)) {
        const field = path ? `${path}.${k}` : k;
        const next = this.#walk(item, report, field);
        const key = this.redactString(k, report, field);
        if (next !== item || key !== k) {
          copy ??= { ...value as Record<string, unknown> };
          if (key !== k) delete copy[k];
          copy[key] = next;
        }
      }
      return copy ?? value;
    }
    return value;
  }
}

/**
 * Merges redaction reports.
 *
 * @example
 * ```ts
 * import { mergeRedaction } from "noema";
 * mergeRedaction([]).applied; // false
 * ```
 */
export function mergeRedaction(reports: readonly RedactionReport[]): RedactionReport {
  const out: RedactionReport = { applied: false, masked: 0, secrets: [], patterns: [], fields: [] };
  for (const r of reports) {
    out.applied ||= r.applied;
    out.masked += r.masked;
    for (const s of r.secrets) if (!out.secrets.includes(s)) out.secrets.push(s);
    for (const p of r.patterns) if (!out.patterns.includes(p)) out.patterns.push(p);
    for (const f of r.fields) if (!out.fields.includes(f)) out.fields.push(f);
  }
  return out;
}
