/**
 * `lspilot/requestPermission`: the choices shown to the user and the reply built from the pick.
 * Plain TypeScript; src/permissions.ts shows the choices in a modal quick pick.
 */
import type { PermissionKind, PermissionReply, RequestPermissionParams } from "./protocol";

export interface PermissionChoice {
  optionId: string;
  label: string;
  kind: PermissionKind;
  /** Rejections may carry feedback for the model (a reject with feedback lets the turn go on). */
  asksFeedback: boolean;
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
    }));
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

/** What an editor must offer: pick one choice (undefined: dismissed), then maybe ask for feedback. */
export interface PermissionPrompt {
  pick(params: RequestPermissionParams, choices: PermissionChoice[]): Promise<PermissionChoice | undefined>;
  feedback(choice: PermissionChoice): Promise<string | undefined>;
}

/** Answer one request through `prompt`. */
export async function answerPermission(
  params: RequestPermissionParams,
  prompt: PermissionPrompt,
): Promise<PermissionReply> {
  const choice = await prompt.pick(params, permissionChoices(params));
  const feedback = choice?.asksFeedback ? await prompt.feedback(choice) : undefined;
  return permissionReply(choice, feedback);
}
