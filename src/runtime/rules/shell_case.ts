/**
 * Where the shell reader is in the `case … esac` commands it has open. A case pattern ends at a `)` (`case x in x)
 * rm x;; esac`), which must not be taken for the end of a `$( … )` or `<( … )` holding the `case`: bash and dash
 * read `echo $(case x in x) rm x;; esac)` as one substitution, which runs `rm x`.
 *
 * @module
 */

/**
 * What the reader waits for in one open `case`: its word, `in`, the first word of a pattern list (where `esac` ends
 * the case), a further word of the list (after `(` or `|`: `esac` there is a pattern), or the item's commands.
 */
type Step = "word" | "in" | "pattern" | "patternMore" | "patternEnd" | "body";

/** The words before `case` that leave it a keyword to bash (`time case`, `time -p case`, `coproc case`). */
const LEADERS = new Set(["time", "coproc"]);

/**
 * The `case` commands open at a point of a command line, innermost last.
 *
 * @example
 * ```ts
 * import { CaseTracker } from "./shell_case.ts";
 * const cases = new CaseTracker();
 * for (const w of ["case", "x", "in"]) cases.word(w, w === "case"); // true: no command
 * cases.closesPattern(); // true: the ")" of `x)` ends the pattern
 * ```
 */
export class CaseTracker {
  #open: Step[] = [];
  /** Set when a `case` is not followed by its word and `in`: the shells read the line differently (or refuse it). */
  broken = false;

  /**
   * Whether the innermost `case` is in its own syntax (its word, `in`, a pattern list), where a `;` or `&` cannot
   * stand: one there means the line is no `case` to one of the shells (`time case x in x; rm x` runs `rm x` in dash).
   */
  get inSyntax(): boolean {
    const step = this.#open.at(-1);
    return step === "word" || step === "in" || this.inPattern;
  }

  /** Whether a `case` is open. */
  get open(): boolean {
    return this.#open.length > 0;
  }

  /** Whether the reader is in a pattern list (a `(` there only opens the pattern: `case x in (x) …`). */
  get inPattern(): boolean {
    const step = this.#open.at(-1);
    return step === "pattern" || step === "patternMore" || step === "patternEnd";
  }

  /** Whether the reader is inside a pattern list, past its first word or `(`: no newline may stand there. */
  get midPattern(): boolean {
    const step = this.#open.at(-1);
    return step === "patternMore" || step === "patternEnd";
  }

  /** A `(` or `|` in a pattern list: the words after it are patterns (`(esac)`, `x|esac)`), not the case's end. */
  patternGoesOn(): void {
    if (this.inPattern) this.#open[this.#open.length - 1] = "patternMore";
  }

  /**
   * A word read (`literal`: its text when it holds no expansion, else null), and whether it stands where a command
   * starts (`commandStart`: only keywords before it in its command). True when it is part of a `case`'s own syntax
   * (`case WORD in`, a pattern, `esac`), which is no command: its substitutions are read all the same.
   */
  word(literal: string | null, commandStart: boolean): boolean {
    const top = this.#open.length - 1;
    const step = this.#open[top];
    if (step === "word") this.#open[top] = "in";
    else if (step === "in") {
      // Anything but `in` there: bash refuses the line, but dash, to which `case` after `time` is a word, runs it on.
      if (literal === "in") this.#open[top] = "pattern";
      else this.broken = true;
    } else if (step === "pattern") {
      if (literal === "esac") this.#open.pop(); // `case x in esac`, `;; esac`
      else this.#open[top] = "patternEnd";
    } else if (step === "patternMore") {
      this.#open[top] = "patternEnd"; // a pattern word: `x|esac)` is a pattern
    } else if (step === "patternEnd") {
      this.broken = true; // two words with no `|` between: no pattern list to bash (dash may run them as a command)
    } else if (commandStart && literal === "case") this.#open.push("word");
    else if (commandStart && literal === "esac" && step === "body") this.#open.pop();
    else return false;
    return true;
  }

  /** A `)`: true when it ends a pattern (the item's commands follow), false when it is some other `)`. */
  closesPattern(): boolean {
    if (!this.inPattern) return false;
    this.#open[this.#open.length - 1] = "body";
    return true;
  }

  /** A `;;`, `;&` or `;;&`: the next pattern follows. False when no `case` is open there. */
  endsItem(): boolean {
    if (this.#open.at(-1) !== "body") return false;
    this.#open[this.#open.length - 1] = "pattern";
    return true;
  }
}

/**
 * Whether a word stands where a command starts: only keywords (and `time`, `time -p`, `coproc`) before it in its
 * command. After `time` or `coproc`, `case` is a keyword to bash but a word to dash: a `case` that does not go on as
 * one (`time case x; rm x`, which dash runs) breaks the tracker, and the line is unreadable.
 *
 * @example
 * ```ts
 * import { atCommandStart } from "./shell_case.ts";
 * atCommandStart(["then"], (w) => w === "then"); // true
 * ```
 */
export function atCommandStart(before: readonly (string | null)[], isKeyword: (w: string) => boolean): boolean {
  return before.every((w, k) =>
    w !== null && (isKeyword(w) || LEADERS.has(w) || (w === "-p" && before[k - 1] === "time"))
  );
}
