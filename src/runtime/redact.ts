/**
 * Masking secrets before anything reaches an artifact: the values of
 * environment variables named as secrets, of those whose names say secret
 * (`GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `DB_PASSWORD`…, see
 * {@link envSecretNames}), and common token shapes.
 *
 * @module
 */
import process from "node:process";
import { structuralWordHolding } from "../schema/vocabulary.ts";

/** The mask that replaces a token found by pattern. A named secret's value becomes `[REDACTED:<NAME>]`. */
export const MASK = "[REDACTED]";

const NAMED_MASK = /\[REDACTED:([A-Za-z_][A-Za-z0-9_]*)\]/g;

/** Common token shapes masked even when not named. */
export const TOKEN_PATTERNS: readonly { name: string; pattern: RegExp; group?: number }[] = [
  { name: "openai_key", pattern: /\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}/g },
  { name: "anthropic_key", pattern: /\bsk-ant-[A-Za-z0-9_-]{20,}/g },
  { name: "github_token", pattern: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}/g },
  { name: "aws_access_key", pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  { name: "slack_token", pattern: /\bxox[a-z]-[A-Za-z0-9-]{10,}/g },
  { name: "bearer_token", pattern: /\b[Bb][Ee][Aa][Rr][Ee][Rr]\s+[A-Za-z0-9._~+/-]{16,}=*/g },
  { name: "jwt", pattern: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  // The password of a URL (`postgres://user:pass@host`): only `group` 1 is masked, the rest stays readable.
  {
    name: "url_password",
    pattern: /\b[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s/:@"]*:(?!\[REDACTED\]@)([^\s/@"]+)@/g,
    group: 1,
  },
  // A key block without its END line (cut short) is masked to the end of the text.
  {
    name: "private_key",
    pattern: /-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----|[\s\S]*$)/g,
  },
];

/**
 * A cheap first test before the per-pattern pass: one pattern for the token
 * shapes, and for URL passwords a test for `://` first (most text has none,
 * while a pattern starting at every word would cost on every text).
 */
const ANY_SHAPE = new RegExp(
  TOKEN_PATTERNS.filter((t) => t.group === undefined).map((t) => t.pattern.source).join("|"),
);
const URL_PASSWORD = TOKEN_PATTERNS.find((t) => t.name === "url_password")!.pattern;
function anyToken(text: string): boolean {
  if (ANY_SHAPE.test(text)) return true;
  if (!text.includes("://")) return false;
  URL_PASSWORD.lastIndex = 0;
  const found = URL_PASSWORD.test(text);
  URL_PASSWORD.lastIndex = 0; // matchAll and replace start from it
  return found;
}

/**
 * A part of every match of every {@link TOKEN_PATTERNS} entry, made only of
 * characters JSON never escapes: when it is absent from a value's JSON text,
 * no string in that value can hold a token. The bearer scheme is matched in
 * any case (`bearer`, `BEARER`: an auth scheme is case-insensitive).
 *
 * The lookahead names the first characters of every alternative, which lets
 * JavaScriptCore skip to the next candidate position instead of trying each
 * alternative at every one: with it, the whole test costs 21 ms over the
 * 30 MB of events of a 10,000-step run, against 28 ms without it (and the
 * bearer scheme tested on its own).
 */
const SHAPE_PREFILTER =
  /(?=[sgAxBPeb])(?:sk-[A-Za-z0-9_-]{20}|gh[pousr]_[A-Za-z0-9]{36}|github_pat_|AKIA|ASIA|xox[a-z]-|[Bb][Ee][Aa][Rr][Ee][Rr]|PRIVATE KEY-----|eyJ[A-Za-z0-9_-]{8})/;
/** The same for URL passwords: `://` then `user:password@`, tested only where `://` occurs. */
const URL_PREFILTER = /:\/\/[^\s/:@"]*:[^\s/@"]+@/;
function tokenPrefilter(text: string): boolean {
  return SHAPE_PREFILTER.test(text) || (text.includes("://") && URL_PREFILTER.test(text));
}

/**
 * noema's own secrets: always masked when set, never passed to child
 * processes or policy workers (see `childEnv`).
 */
export const NOEMA_OWN_SECRETS: readonly string[] = ["NOEMA_SIGNING_KEY"];

/**
 * Whether an environment variable is one of noema's own secrets:
 * `NOEMA_SIGNING_KEY`, and any other `NOEMA_*` variable whose name says key,
 * secret, token, password or credential (`NOEMA_SIGNING_KID` names a key and is not one).
 *
 * @example
 * ```ts
 * import { isNoemaSecret } from "noema";
 * isNoemaSecret("NOEMA_SIGNING_KEY"); // true
 * isNoemaSecret("NOEMA_SIGNING_KEY_FILE"); // true: where the Ed25519 key is, kept from children too
 * isNoemaSecret("NOEMA_EPISODE_ID"); // false
 * ```
 */
export function isNoemaSecret(name: string): boolean {
  return NOEMA_OWN_SECRETS.includes(name) ||
    /^NOEMA_(?:.*_)?(?:KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)/i.test(name);
}

/** Names that say secret, whatever the value's length (at least 6 characters). */
const SECRET_NAME = /SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|CREDENTIAL/i;
/** Names ending in `_KEY`: a secret when the value has at least 8 characters. */
const KEY_NAME = /_KEY$/i;
/** Values that are settings, not secrets, whatever the variable's name (`TOKENIZERS_PARALLELISM=false`). */
const PLAIN_VALUE = /^(?:true|false|yes|no|on|off|none|null|enabled?|disabled?|[0-9]+(?:\.[0-9]+)?)$/i;

/**
 * The environment variables whose values are masked without being named:
 * names containing `SECRET`, `TOKEN`, `PASSWORD`, `PASSWD`, `API_KEY`,
 * `PRIVATE_KEY` or `CREDENTIAL` (any case) with a value of at least 6
 * characters, and names ending in `_KEY` with a value of at least 8 — except
 * values that are booleans or numbers, values found inside a word the
 * artifacts are made of (`SESSION_TOKEN=verify`: see `contractWords`), and
 * the names in `optOut` (`"!NAME"` entries of `secrets`, `--not-secret NAME`).
 *
 * @example
 * ```ts
 * import { envSecretNames } from "noema";
 * envSecretNames({ GITHUB_TOKEN: "ghx_0123456789", HOME: "/home/ana", TOKENIZERS_PARALLELISM: "false" }); // ["GITHUB_TOKEN"]
 * ```
 */
export function envSecretNames(
  env: Record<string, string | undefined> = process.env,
  optOut: readonly string[] = [],
): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value.length < 6 || optOut.includes(name) || PLAIN_VALUE.test(value)) continue;
    if (!SECRET_NAME.test(name) && !(KEY_NAME.test(name) && value.length >= 8)) continue;
    if (structuralWordHolding(value) === null) out.push(name);
  }
  return out;
}

const live = new Map<symbol, Redactor>();

/**
 * Declares the redactor of an episode being written in this process, so that
 * code which cannot be handed it (a child process's output excerpts, see
 * `runProcess`) masks its secrets too. Returns the function that withdraws it.
 *
 * @example
 * ```ts
 * import { activeRedactor, declareSecrets, Redactor } from "noema";
 * const withdraw = declareSecrets(new Redactor({ secrets: ["API_TOKEN"], env: { API_TOKEN: "hunter2hunter2" } }));
 * activeRedactor().redactString("hunter2hunter2"); // "[REDACTED:API_TOKEN]"
 * withdraw();
 * ```
 */
export function declareSecrets(redactor: Redactor): () => void {
  const key = Symbol("secrets");
  live.set(key, redactor);
  return () => void live.delete(key);
}

/**
 * One redactor for the secrets of every episode being written in this
 * process (see {@link declareSecrets}); with none open, it masks token
 * shapes and noema's own secrets.
 *
 * @example
 * ```ts
 * import { activeRedactor } from "noema";
 * activeRedactor().redactString("key AKIAQWERTYUIOPASDFGH"); // "key [REDACTED]"
 * ```
 */
export function activeRedactor(): Redactor {
  return Redactor.union([...live.values()]);
}

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

  /** Each named value and its JSON-escaped form (what it looks like inside a JSON text). */
  readonly #needles: string[];
  /** Length of the longest named value. */
  readonly longest: number;
  /**
   * Named secrets that are not masked because their value occurs inside a word the artifacts are made of (a key
   * or a fixed value: `verify`, `success`); `word` is that word. A run refuses such a secret named explicitly.
   */
  readonly unmaskable: readonly { name: string; word: string }[];

  /**
   * `secrets` names environment variables whose values are masked;
   * noema's own secrets ({@link NOEMA_OWN_SECRETS}) are always added, and so
   * are the variables whose names say secret ({@link envSecretNames}) unless
   * `detect` is false. An entry `"!NAME"` opts `NAME` out of that detection
   * (a name given plainly too is still masked).
   */
  constructor(
    options: { secrets?: readonly string[]; env?: Record<string, string | undefined>; detect?: boolean } = {},
  ) {
    const env = options.env ?? process.env;
    this.#env = env;
    const given = options.secrets ?? [];
    const named = given.filter((n) => !n.startsWith("!"));
    const optOut = given.filter((n) => n.startsWith("!")).map((n) => n.slice(1));
    const detected = options.detect === false ? [] : envSecretNames(env, optOut);
    const names = [...new Set([...named, ...NOEMA_OWN_SECRETS, ...detected])];
    this.#names = new Set(names);
    const values = names
      .map((name) => ({ name, value: env[name] ?? "" }))
      // Very short values would mask ordinary text; they are not treated as secrets.
      .filter((s) => s.value.length >= 4);
    // Nor values inside the artifacts' own words: masking them would rewrite keys and fixed values.
    this.unmaskable = values.flatMap((s) => {
      const word = structuralWordHolding(s.value);
      return word === null ? [] : [{ name: s.name, word }];
    });
    this.#values = values.filter((s) => !this.unmaskable.some((u) => u.name === s.name))
      .sort((a, b) => b.value.length - a.value.length);
    this.#needles = [...new Set(this.#values.flatMap((s) => [s.value, JSON.stringify(s.value).slice(1, -1)]))];
    this.longest = this.#values[0]?.value.length ?? 0;
  }

  /**
   * A redactor masking the named values of all of `redactors` (each under its
   * name; the first wins for a name given twice) and the token shapes.
   *
   * @example
   * ```ts
   * import { Redactor } from "noema";
   * const a = new Redactor({ secrets: ["A"], env: { A: "aaaa-1111" } });
   * const b = new Redactor({ secrets: ["B"], env: { B: "bbbb-2222" } });
   * Redactor.union([a, b]).redactString("aaaa-1111 bbbb-2222"); // "[REDACTED:A] [REDACTED:B]"
   * ```
   */
  static union(redactors: readonly Redactor[]): Redactor {
    const env: Record<string, string> = {};
    for (const r of redactors) for (const { name, value } of r.#values) env[name] ??= value;
    return new Redactor({ secrets: Object.keys(env), env: { ...process.env, ...env }, detect: false });
  }

  /**
   * A fast, conservative test over a value's JSON text: false means no string
   * (key or value) in it holds a named secret or a token, so it can be written
   * as is; true means {@link Redactor.redact} must look.
   *
   * @example
   * ```ts
   * import { Redactor } from "noema";
   * new Redactor().mightContain(JSON.stringify({ a: "plain" })); // false
   * ```
   */
  mightContain(jsonText: string): boolean {
    for (const n of this.#needles) if (jsonText.includes(n)) return true;
    return tokenPrefilter(jsonText);
  }

  /**
   * Where secrets are in a text: `[start, end)` of each occurrence of a named
   * value and each token-pattern match (spans may overlap).
   *
   * @example
   * ```ts
   * import { Redactor } from "noema";
   * new Redactor({ secrets: ["T"], env: { T: "hunter2hunter2" } }).spans("x hunter2hunter2"); // [[2, 16]]
   * ```
   */
  spans(text: string): [number, number][] {
    const out: [number, number][] = [];
    for (const s of this.#values) {
      for (let i = text.indexOf(s.value); i !== -1; i = text.indexOf(s.value, i + 1)) {
        out.push([i, i + s.value.length]);
      }
    }
    if (anyToken(text)) {
      for (const { pattern, group } of TOKEN_PATTERNS) {
        pattern.lastIndex = 0;
        for (const m of text.matchAll(pattern)) {
          const start = group === undefined ? m.index! : m.index! + m[0].lastIndexOf(m[group]!);
          out.push([start, start + (group === undefined ? m[0] : m[group]!).length]);
        }
      }
    }
    return out;
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
    for (const { name, pattern, group } of anyToken(out) ? TOKEN_PATTERNS : []) {
      pattern.lastIndex = 0;
      if (!pattern.test(out)) continue;
      pattern.lastIndex = 0;
      out = out.replace(pattern, (m: string, ...groups: unknown[]) => {
        if (report) {
          report.masked++;
          if (!report.patterns.includes(name)) report.patterns.push(name);
        }
        if (group === undefined) return MASK;
        const secret = String(groups[group - 1]), at = m.lastIndexOf(secret);
        return m.slice(0, at) + MASK + m.slice(at + secret.length);
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
    // The usual case: nothing to put back, nothing copied.
    if (!someString(value, (s) => s.includes("[REDACTED"))) return { value, unresolved: [] };
    const unresolved: string[] = [];
    const env = this.#env;
    const walk = (v: unknown): unknown => {
      if (typeof v === "string") {
        if (!v.includes("[REDACTED")) return v;
        const out = v.replace(NAMED_MASK, (m, name: string) => {
          // noema's own secrets are never handed back to an adapter: they stay masked.
          if (NOEMA_OWN_SECRETS.includes(name)) return m;
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
    // Almost every value holds no secret: find that out without copying or building field paths.
    if (!someString(value, this.#suspect)) return { value, report };
    return { value: this.#walk(value, report, path) as T, report };
  }

  /** Whether one string (a key or a value) may hold a named secret or a token. */
  readonly #suspect = (text: string): boolean => {
    for (const s of this.#values) if (text.includes(s.value)) return true;
    return tokenPrefilter(text);
  };

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
        const key = this.redactString(k);
        const field = path ? `${path}.${key}` : key;
        if (key !== k) this.redactString(k, report, field); // counted under the masked path
        const next = this.#walk(item, report, field);
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

/** Whether `test` holds for any string in a JSON value, key or value (a walk that copies nothing). */
function someString(value: unknown, test: (text: string) => boolean): boolean {
  if (typeof value === "string") return test(value);
  if (typeof value !== "object" || value === null) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (someString(item, test)) return true;
    return false;
  }
  const obj = value as Record<string, unknown>;
  for (const k in obj) if (Object.hasOwn(obj, k) && (test(k) || someString(obj[k], test))) return true;
  return false;
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
