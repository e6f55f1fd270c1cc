/**
 * What the report tests (`tests/report.test.ts`) and the report benchmark
 * (`bench/report.ts`) share: the N-step task of the big episode, finding
 * headless Chromium and its flags, the page copy that times its own render,
 * and the plain-text page the render is compared with.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import process from "node:process";

/**
 * A task of `n` act steps (`echo step i`) for the minimal adapter.
 *
 * @example
 * ```ts
 * import { stepsTask } from "./helpers/report_page.ts";
 * stepsTask(3).steps.length; // 3
 * ```
 * @param task @default `${n} steps`
 */
export function stepsTask(n: number, task = `${n} steps`): {
  task: string;
  using: string;
  steps: { kind: string; description: string; inputs: { command: string } }[];
} {
  const steps = Array.from({ length: n }, (_, i) => ({
    kind: "act",
    description: `Step ${i}`,
    inputs: { command: `echo step ${i}` },
  }));
  return { task, using: "minimal", steps };
}

/**
 * The Chromium binary: `$CHROMIUM`, else Debian's `/usr/bin/chromium`, else
 * `chromium` on PATH, the first that starts; null when none does.
 *
 * @example
 * ```ts
 * import { findChromium } from "./helpers/report_page.ts";
 * const browser = findChromium(); // "/usr/bin/chromium" or null
 * ```
 */
export function findChromium(): string | null {
  for (const c of [process.env.CHROMIUM, "/usr/bin/chromium", "chromium"]) {
    if (!c) continue;
    const r = spawnSync(c, ["--version"], { encoding: "utf8", timeout: 30_000 });
    if (!r.error && r.status === 0) return c;
  }
  return null;
}

/**
 * Headless Chromium's arguments to load the file `target` with a fresh
 * profile in `profileDir`, offline (no background network, updates or sync).
 *
 * @example
 * ```ts
 * import { chromiumArgs } from "./helpers/report_page.ts";
 * chromiumArgs("/tmp/profile", ["--dump-dom"], "/tmp/page.html");
 * ```
 */
export function chromiumArgs(profileDir: string, extra: readonly string[], target: string): string[] {
  return [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    `--user-data-dir=${profileDir}`,
    ...extra,
    `file://${target}`,
  ];
}

/** What the probe of {@link timedPage} writes into the title: ms since navigation start, element count. */
export const RENDER_PROBE: RegExp = /RENDER_MS=(\d+) NODES=(\d+)/;

/**
 * A copy of a report page whose CSP allows one inline script at the end of
 * `<body>`: it forces layout and writes the time since navigation start and
 * the element count into the title (read back with {@link RENDER_PROBE} from
 * `--dump-dom`).
 *
 * @example
 * ```ts
 * import { RENDER_PROBE, timedPage } from "./helpers/report_page.ts";
 * const html = timedPage("<html><body></body></html>");
 * ```
 */
export function timedPage(page: string): string {
  const probe = "<script>document.body.offsetHeight;document.title='RENDER_MS='+Math.round(performance.now())+" +
    "' NODES='+document.getElementsByTagName('*').length;</script>";
  return page.replace("script-src &#39;none&#39;", "script-src &#39;unsafe-inline&#39;")
    .replace("</body>", `${probe}</body>`);
}

/**
 * The least page that shows `text`: escaped in one `<pre>` (the baseline a
 * report's render is compared with).
 *
 * @example
 * ```ts
 * import { plainPage } from "./helpers/report_page.ts";
 * plainPage("a < b"); // "<!doctype html>…<pre>a &lt; b</pre>…"
 * ```
 */
export function plainPage(text: string): string {
  const body = text.replace(/&/g, "&amp;").replace(/</g, "&lt;");
  return `<!doctype html><html><head><meta charset="utf-8"></head><body><pre>${body}</pre></body></html>`;
}
