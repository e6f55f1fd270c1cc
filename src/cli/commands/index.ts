/**
 * Every `noema` command, in `--help` order. To add a command, create
 * `src/cli/commands/<name>.ts` exporting a {@link RegisterCommand} and add
 * one line here.
 *
 * @module
 */
import type { RegisterCommand } from "../context.ts";
import { registerApproval, registerResume } from "./approval.ts";
import { registerCompletions } from "./completions.ts";
import { registerDiff } from "./diff.ts";
import { registerEvents } from "./events.ts";
import { registerHook } from "./hook.ts";
import { registerInit } from "./init.ts";
import { registerList } from "./list.ts";
import { registerPlan } from "./plan.ts";
import { registerRun } from "./run.ts";
import { registerSchema } from "./schema.ts";
import { registerState } from "./state.ts";
import { registerSummary } from "./summary.ts";
import { registerValidate } from "./validate.ts";
import { registerVerify } from "./verify.ts";
import { registerVersion } from "./version.ts";
import { registerView } from "./view.ts";

/** The commands, registered in this order (which is the `--help` order). */
export const COMMANDS: readonly RegisterCommand[] = [
  // Run (approve, resume… go here too)
  registerRun,
  registerApproval,
  registerResume,
  // Agents (hooks)
  registerHook,
  // Inspect
  registerList,
  registerView,
  registerState,
  registerSummary,
  registerEvents,
  registerPlan,
  registerDiff,
  // Integrity
  registerValidate,
  registerVerify,
  registerSchema,
  // Plugin authoring
  registerInit,
  // Shell
  registerCompletions,
  registerVersion,
];
