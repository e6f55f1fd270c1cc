#!/usr/bin/env bun
/**
 * The `noema` executable (package.json `bin`). Runs the CLI under Bun, or
 * under Deno with `deno run -A bin/noema.ts`.
 *
 * @module
 */
import process from "node:process";
import { main } from "../src/cli/main.ts";

process.exit(await main());
