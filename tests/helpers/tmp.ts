/**
 * Temp directories for tests.
 *
 * @module
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A temp dir with helpers; call `cleanup()` in `after`. */
export function tempDir(
  prefix = "noema-test-",
): { path: string; file(name: string, text: string): string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return {
    path,
    file(name, text) {
      const p = join(path, name);
      writeFileSync(p, text);
      return p;
    },
    cleanup() {
      rmSync(path, { recursive: true, force: true });
    },
  };
}
