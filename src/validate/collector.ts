/**
 * The problem collector of `noema validate`: counts every problem and keeps
 * the first `max`; and how a file path is shown in a problem.
 *
 * @module
 */
import { relative } from "node:path";
import process from "node:process";
import type { SchemaProblem } from "../schema/problems.ts";
import type { ProfileRuleId } from "./profile.ts";
import type { RuleId } from "./rules.ts";

/** One problem found by validation. */
export interface ValidationProblem {
  /** The file at fault, as shown to the user. */
  file: string;
  /** 1-based line, for JSONL files and JSON parse errors. */
  line?: number;
  /** The rule broken (see `RULES`). */
  rule: RuleId;
  /** What is wrong, starting with the field when there is one. */
  message: string;
}

/** One warning of a validation profile (`--profile noema`): the shape of a {@link ValidationProblem}. */
export interface ValidationWarning {
  /** The file the warning is about, as shown to the user. */
  file: string;
  /** 1-based line, for JSONL files. */
  line?: number;
  /** The profile rule (see `PROFILE_RULES`). */
  rule: ProfileRuleId;
  /** What noema expects, starting with the field. */
  message: string;
}

/**
 * Collects problems: all are counted, the first `max` are kept. Warnings of
 * the `noema` profile likewise, when `profile` is on (else they are dropped).
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * const c = new Collector(10);
 * c.add("state.json", "state.schema", "version: must be 1.0", 2);
 * console.log(c.count, c.problems[0].line); // 1 2
 * ```
 */
export class Collector {
  /** The problems kept, in the order found. */
  problems: ValidationProblem[] = [];
  /** Every problem found. */
  count = 0;
  /** The warnings kept (profile `noema` only), in the order found. */
  warnings: ValidationWarning[] = [];
  /** Every warning found (profile `noema` only). */
  warningCount = 0;
  /** `max`: the most problems (and the most warnings) kept; `profile`: whether warnings are collected. */
  constructor(readonly max: number, readonly profile = false) {}
  /** Adds one warning of the `noema` profile (nothing when the profile is off). */
  warn(file: string, rule: ProfileRuleId, message: string, line?: number): void {
    if (!this.profile) return;
    this.warningCount++;
    if (this.warnings.length < this.max) {
      this.warnings.push(line === undefined ? { file, rule, message } : { file, line, rule, message });
    }
  }
  /** Adds one problem. */
  add(file: string, rule: RuleId, message: string, line?: number): void {
    this.count++;
    if (this.problems.length < this.max) {
      this.problems.push(line === undefined ? { file, rule, message } : { file, line, rule, message });
    }
  }
  /** Adds schema problems, each prefixed by its path. */
  schema(file: string, rule: RuleId, problems: SchemaProblem[], line?: number): void {
    for (const p of problems) this.add(file, rule, p.path ? `${p.path}: ${p.message}` : p.message, line);
  }
}

/**
 * A path as shown in problems: relative to the working directory when that is shorter and inside it.
 *
 * @example
 * ```ts
 * import { display } from "./collector.ts";
 * display("/elsewhere/state.json"); // "/elsewhere/state.json" unless the cwd is above it
 * ```
 */
export function display(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith("..") && rel.length < path.length ? rel : path;
}
