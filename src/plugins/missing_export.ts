/**
 * Where a plugin file imports a name its module does not export. Bun says
 * only `Export named 'X' not found in module 'M'` (Deno adds the file, line and
 * column); this finds the `import { … X … } from "M"` in the plugin's own text
 * so the error says where, as Deno's does.
 *
 * @module
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve } from "node:path";

/** A plugin file larger than this is not searched (a policy is a few kB). */
const MAX_SEARCH_BYTES = 1024 * 1024;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The text of `file` when it is a regular file of at most {@link MAX_SEARCH_BYTES}, else null. */
function smallText(file: string): string | null {
  let fd: number | undefined;
  try {
    // O_NONBLOCK: a FIFO put where the plugin was does not block the open (no effect on a regular file).
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size > MAX_SEARCH_BYTES) return null;
    const buf = Buffer.alloc(stat.size);
    const n = readSync(fd, buf, 0, stat.size, 0);
    return buf.subarray(0, n).toString("utf8");
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * `file:LINE:COLUMN` (relative to the plugin's directory) of the name Bun's
 * message says `file` imports but its module does not export, or null when
 * the message is another one or the import is not in `file` itself (but in a
 * module it imports).
 *
 * @example
 * ```ts
 * import { missingExportSite } from "./missing_export.ts";
 * missingExportSite("Export named 'nope' not found in module 'noema'.", "/p/policy.ts"); // "policy.ts:2:22" when its line 2 imports it
 * ```
 */
export function missingExportSite(message: string, file: string): string | null {
  const m = /Export named '([^']+)' not found in module '([^']+)'/.exec(message);
  if (!m) return null;
  const [, name, module] = m;
  const text = smallText(file);
  if (text === null) return null;
  const dir = dirname(file);
  const imports = /import\s+(?:type\s+)?(?:[\w$]+\s*,\s*)?\{([^}]*)\}\s*from\s*(["'])([^"']+)\2/g;
  const named = new RegExp(`(^|[\\s,])(?:type\\s+)?${escape(name)}(?=\\s+as\\s|\\s*,|\\s*$)`);
  for (const im of text.matchAll(imports)) {
    const spec = im[3];
    const sameModule = spec === module || (spec.startsWith(".") && resolve(dir, spec) === module);
    if (!sameModule) continue;
    const hit = named.exec(im[1]);
    if (!hit) continue;
    const offset = im.index! + im[0].indexOf("{") + 1 + hit.index + hit[1].length +
      (/^type\s+/.exec(im[1].slice(hit.index + hit[1].length))?.[0].length ?? 0);
    const before = text.slice(0, offset);
    const rel = relative(dir, file);
    const shown = rel.startsWith("..") || isAbsolute(rel) ? file : rel;
    return `${shown}:${before.split("\n").length}:${offset - before.lastIndexOf("\n")}`;
  }
  return null;
}
