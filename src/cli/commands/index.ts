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
import { registerLast } from "./last.ts";
import { registerInstallHooks } from "./install_hooks.ts";
import { registerList } from "./list.ts";
import { registerPlan } from "./plan.ts";
import { registerPolicy } from "./policy.ts";
import { registerPrune } from "./prune.ts";
import { registerReport } from "./report.ts";
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
  registerInstallHooks,
  // Inspect
  registerList,
  registerLast,
  registerView,
  registerState,
  registerSummary,
  registerEvents,
  registerPlan,
  registerDiff,
  registerReport,
  // Integrity
  registerValidate,
  registerVerify,
  registerSchema,
  registerPrune,
  // Plugin authoring
  registerInit,
  registerPolicy,
  // Shell
  registerCompletions,
  registerVersion,
];
