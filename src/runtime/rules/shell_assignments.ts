/**
 * The shape of a shell assignment word: `NAME=value`, `NAME+=value`, and bash's array elements `NAME[SUBSCRIPT]=value`
 * and `NAME[SUBSCRIPT]+=value` (the subscript may hold brackets of its own: `a[b[1]]=1`). Before a command's name,
 * such a word is an assignment, not the program: `a[0]=1 rm x` runs `rm x`.
 *
 * @module
 */

/** A name the shell may assign to. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;

/**
 * The index of the `=` of an assignment word (its `+=` counted as `=`), or -1 when the text is none. The subscript's
 * brackets are counted as bash counts them (`a[b[1]]=1`).
 *
 * @example
 * ```ts
 * import { assignmentEnd } from "./shell_assignments.ts";
 * assignmentEnd("FOO=1"); // 3
 * assignmentEnd("a[b[1]]+=x"); // 8
 * assignmentEnd("rm"); // -1
 * ```
 */
export function assignmentEnd(text: string): number {
  const name = NAME.exec(text);
  if (name === null) return -1;
  let j = name[0].length;
  if (text[j] === "[") {
    let depth = 0;
    for (; j < text.length; j++) {
      if (text[j] === "[") depth++;
      else if (text[j] === "]" && --depth === 0) break;
    }
    if (j >= text.length) return -1;
    j++;
  }
  if (text[j] === "+") j++;
  return text[j] === "=" ? j : -1;
}

/**
 * Whether a word's text is an assignment (see {@link assignmentEnd}).
 *
 * @example
 * ```ts
 * import { isAssignment } from "./shell_assignments.ts";
 * isAssignment("a[0]=1"); // true
 * isAssignment("a[0]"); // false
 * ```
 */
export function isAssignment(text: string): boolean {
  return assignmentEnd(text) !== -1;
}

/**
 * The variable an assignment word sets (`a` for `a[0]+=x`), or null when the text is none.
 *
 * @example
 * ```ts
 * import { assignedName } from "./shell_assignments.ts";
 * assignedName("a[0]+=x"); // "a"
 * ```
 */
export function assignedName(text: string): string | null {
  return isAssignment(text) ? NAME.exec(text)![0] : null;
}
