/**
 * SecretScanner: reviews every tool result before the agent sees it and
 * masks credentials in it: OpenAI and Anthropic keys (`sk-…`, `sk-ant-…`),
 * AWS access key ids (`AKIA…`, `ASIA…`) and secret keys
 * (`aws_secret_access_key = …`), GitHub tokens (`ghp_…`, `github_pat_…`),
 * Slack tokens (`xox?-…`), bearer tokens and private key blocks. The agent
 * gets the result with each match replaced by `[REDACTED]`; the episode
 * records the redaction (and, as always, masks the secrets in its own files).
 *
 * A review-only policy: its `advise` says nothing.
 *
 * @module
 */
import { DirectedIntuition, type ReviewReturn, type ReviewState } from "noema";

/** What counts as a credential: name and regular expression source. */
export const CREDENTIALS: readonly { name: string; pattern: string }[] = [
  { name: "Anthropic key", pattern: String.raw`\bsk-ant-[A-Za-z0-9_-]{20,}` },
  { name: "OpenAI key", pattern: String.raw`\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}` },
  { name: "AWS access key id", pattern: String.raw`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b` },
  {
    name: "AWS secret access key",
    pattern: String.raw`(?<=(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY)\s*[=:]\s*["']?)[A-Za-z0-9/+=]{40}`,
  },
  {
    name: "GitHub token",
    pattern: String.raw`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}`,
  },
  { name: "Slack token", pattern: String.raw`\bxox[abposr]-[A-Za-z0-9-]{10,}` },
  { name: "bearer token", pattern: String.raw`(?<=\bBearer\s+)[A-Za-z0-9._~+/-]{16,}=*` },
  {
    name: "private key",
    pattern: String.raw`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)`,
  },
];

export default class SecretScanner extends DirectedIntuition {
  static override version = "1.0";

  /** Nothing to say before an action runs. */
  advise() {
    return undefined;
  }

  review(state: ReviewState): ReviewReturn {
    const text = typeof state.result.output === "string"
      ? state.result.output
      : JSON.stringify(state.result.output ?? null) ?? "";
    // Tested as the runtime masks them: case-sensitive, every match.
    const found = CREDENTIALS.filter((c) => new RegExp(c.pattern).test(text));
    if (found.length === 0) return;
    return this.redact({
      patterns: found.map((c) => c.pattern),
      advice: `credentials masked in the ${state.action.tool} result: ${found.map((c) => c.name).join(", ")}`,
      confidence: 0.95,
      risk_tags: ["secret_in_output"],
    });
  }
}
