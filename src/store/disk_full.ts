/**
 * A full disk (or a used-up quota) while noema writes: an error of its own,
 * naming the file, with its own exit code ({@link EXIT.DISK_FULL}), instead
 * of the system's bare `ENOSPC`.
 *
 * @module
 */
import { EXIT, NoemaError } from "../errors.ts";

/** The system error codes of a device with no space left for this writer. */
const FULL = new Set(["ENOSPC", "EDQUOT"]);

/**
 * Whether `e` is a write refused for want of space (`ENOSPC`, `EDQUOT`).
 *
 * @example
 * ```ts
 * import { isDiskFull } from "./disk_full.ts";
 * isDiskFull(Object.assign(new Error("no space"), { code: "ENOSPC" })); // true
 * ```
 */
export function isDiskFull(e: unknown): boolean {
  return FULL.has(String((e as { code?: unknown } | null)?.code));
}

/** No space left on the device holding `file`: nothing more could be written to it. */
export class DiskFullError extends NoemaError {
  constructor(file: string, cause: unknown) {
    const code = String((cause as { code?: unknown } | null)?.code ?? "ENOSPC");
    super("disk_full", `no space left on the device (${code}): nothing more could be written`, {
      file,
      exitCode: EXIT.DISK_FULL,
      cause,
    });
    this.name = "DiskFullError";
  }
}

/**
 * `e` as a {@link DiskFullError} when it is a write refused for want of space, else `e` itself.
 *
 * @example
 * ```ts
 * import { diskFull } from "./disk_full.ts";
 * try { writeSync(fd, bytes); } catch (e) { throw diskFull(e, path); }
 * ```
 */
export function diskFull(e: unknown, file: string): unknown {
  return isDiskFull(e) && !(e instanceof DiskFullError) ? new DiskFullError(file, e) : e;
}
