/**
 * Writes `schemas/<name>.schema.json` (JSON Schema 2020-12) for every artifact
 * schema in the registry, and for the files a user writes (`task`, `noema`:
 * a task file and `noema.jsonc`), from the valibot schemas.
 *
 *     bun scripts/gen-schemas.ts           # write the files
 *     bun scripts/gen-schemas.ts --check   # exit 1 and list the stale files
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { jsonSchemaText } from "../src/schema/json_schema.ts";
import { SCHEMA_NAMES, type SchemaName } from "../src/schema/registry.ts";
import { INPUT_SCHEMA_NAMES, inputJsonSchemaText, type InputSchemaName } from "../src/runtime/input_json_schema.ts";

/** Every generated schema: the artifacts', then the input files'. */
export const ALL_SCHEMA_NAMES: readonly (SchemaName | InputSchemaName)[] = [...SCHEMA_NAMES, ...INPUT_SCHEMA_NAMES];

/** The generator's text of one schema file. */
function schemaText(name: SchemaName | InputSchemaName): string {
  return (INPUT_SCHEMA_NAMES as readonly string[]).includes(name)
    ? inputJsonSchemaText(name as InputSchemaName)
    : jsonSchemaText(name as SchemaName);
}

/** The repository's `schemas/` directory. */
export const SCHEMAS_DIR: string = join(dirname(fileURLToPath(import.meta.url)), "..", "schemas");

/** The path of one generated schema file. */
export function schemaPath(name: SchemaName | InputSchemaName, dir: string = SCHEMAS_DIR): string {
  return join(dir, `${name}.schema.json`);
}

/** A schema file whose content differs from the generator's output. */
export interface StaleFile {
  /** Registry name. */
  name: SchemaName | InputSchemaName;
  /** Path of the file. */
  path: string;
  /** Why it is stale. */
  reason: "missing" | "differs";
}

/** Compares every schema file under `dir` with the generator's output. */
export function staleSchemas(dir: string = SCHEMAS_DIR): StaleFile[] {
  const stale: StaleFile[] = [];
  for (const name of ALL_SCHEMA_NAMES) {
    const path = schemaPath(name, dir);
    if (!existsSync(path)) stale.push({ name, path, reason: "missing" });
    else if (readFileSync(path, "utf8") !== schemaText(name)) stale.push({ name, path, reason: "differs" });
  }
  return stale;
}

/** Writes every schema file under `dir`; returns the paths written (changed or new). */
export function writeSchemas(dir: string = SCHEMAS_DIR): string[] {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const { name, path } of staleSchemas(dir)) {
    writeFileSync(path, schemaText(name));
    written.push(path);
  }
  return written;
}

/** Command-line entry: `--check` reports stale files (exit 1), otherwise writes them. */
export function main(args: string[] = process.argv.slice(2)): number {
  const show = (p: string) => relative(process.cwd(), p) || p;
  const unknown = args.filter((a) => a !== "--check");
  if (unknown.length > 0) {
    process.stderr.write(`gen-schemas: unknown argument ${unknown[0]}\nusage: bun scripts/gen-schemas.ts [--check]\n`);
    return 2;
  }
  if (args.includes("--check")) {
    const stale = staleSchemas();
    for (const s of stale) process.stderr.write(`stale: ${show(s.path)} (${s.reason})\n`);
    if (stale.length > 0) {
      process.stderr.write(`${stale.length} schema file(s) out of date; run: npm run gen:schemas\n`);
      return 1;
    }
    process.stdout.write(`schemas up to date (${ALL_SCHEMA_NAMES.length} files)\n`);
    return 0;
  }
  const written = writeSchemas();
  for (const p of written) process.stdout.write(`wrote ${show(p)}\n`);
  process.stdout.write(`${written.length} of ${ALL_SCHEMA_NAMES.length} schema files changed\n`);
  return 0;
}

if (import.meta.main) process.exit(main());
