/**
 * `lspilot/requestPermission`: the choices shown to the user and the reply built from the pick.
 * Plain TypeScript; src/permissions.ts shows the choices in a modal quick pick.
 */
import type { CancellationLike, PermissionKind, PermissionReply, RequestPermissionParams } from "./protocol";

export interface PermissionChoice {
  optionId: string;
  label: string;
  kind: PermissionKind;
  /** Rejections may carry feedback for the model (a reject with feedback lets the turn go on). */
  asksFeedback: boolean;
  /** For "always": what it remembers, and for which patterns it counts as once (and why). */
  detail?: string;
}

const ORDER: PermissionKind[] = ["allow_once", "allow_always", "reject_once", "reject_always"];

const LABELS: Record<PermissionKind, string> = {
  allow_once: "Allow once",
  allow_always: "Always allow",
  reject_once: "Reject",
  reject_always: "Always reject",
};

/** The daemon's options in a fixed order (allow once, always, reject, reject always). */
export function permissionChoices(params: RequestPermissionParams): PermissionChoice[] {
  return [...params.options]
    .sort((a, b) => ORDER.indexOf(a.kind) - ORDER.indexOf(b.kind))
    .map((option) => ({
      optionId: option.optionId,
      label: option.name || LABELS[option.kind],
      kind: option.kind,
      asksFeedback: option.kind === "reject_once" || option.kind === "reject_always",
      ...(option.kind === "allow_always" && alwaysScope(params) ? { detail: alwaysScope(params) } : {}),
    }));
}

/** What "always" does, as the daemon worked it out: "remembers: P; counts as once for Q (why)". */
export function alwaysScope(params: RequestPermissionParams): string {
  const parts = params.always?.length ? [`remembers: ${params.always.join(", ")}`] : [];
  for (const { pattern, reason } of params.alwaysRefused ?? []) parts.push(`counts as once for ${pattern}: ${reason}`);
  return parts.join("; ");
}

/** The question as one line for the picker's title. */
export function permissionTitle(params: RequestPermissionParams): string {
  const patterns = params.patterns.length ? `: ${params.patterns.join(", ")}` : "";
  return `lspilot wants to ${params.title || params.permission}${patterns}`;
}

/** The reply: the picked option (with feedback when given), or cancelled when nothing was picked. */
export function permissionReply(choice: PermissionChoice | undefined, feedback?: string): PermissionReply {
  if (!choice) return { cancelled: true };
  const text = feedback?.trim();
  return choice.asksFeedback && text ? { optionId: choice.optionId, feedback: text } : { optionId: choice.optionId };
}

/**
 * What an editor must offer: pick one choice (undefined: dismissed), then maybe ask for feedback.
 * `token` is cancelled when the daemon withdraws the request (the turn was cancelled or ended, the
 * daemon is shutting down): close the prompt then.
 */
export interface PermissionPrompt {
  pick(params: RequestPermissionParams, choices: PermissionChoice[], token?: CancellationLike): Promise<PermissionChoice | undefined>;
  feedback(choice: PermissionChoice, token?: CancellationLike): Promise<string | undefined>;
}

/** Answer one request through `prompt`. */
export async function answerPermission(
  params: RequestPermissionParams,
  prompt: PermissionPrompt,
  token?: CancellationLike,
): Promise<PermissionReply> {
  const choice = await prompt.pick(params, permissionChoices(params), token);
  const feedback = choice?.asksFeedback && !token?.isCancellationRequested ? await prompt.feedback(choice, token) : undefined;
  if (token?.isCancellationRequested) return { cancelled: true };
  return permissionReply(choice, feedback);
}
