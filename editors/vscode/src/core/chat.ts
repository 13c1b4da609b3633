/**
 * The chat transcript: `lspilot/update` notifications (and `lspilot.history` for a redraw)
 * folded into entries the chat view renders. Plain TypeScript.
 */
import type { History, StopReason, ToolStatus, Update } from "./protocol";

export type Entry =
  | { type: "user"; text: string }
  | { type: "text"; id: string; text: string }
  | { type: "reasoning"; id: string; text: string }
  | { type: "tool"; id: string; tool: string; status: ToolStatus; title: string; output?: string }
  | { type: "review"; proposalId: string; uri?: string; settled: boolean }
  | { type: "plan"; todos: { content: string; status: string }[] }
  | { type: "status"; text: string }
  | { type: "end"; stopReason: StopReason; error?: string };

/**
 * A stored tool call's title: the history keeps no title, only the call's input (JSON), whose
 * file, path, command, pattern or query is what the live title names.
 */
function storedTitle(input: unknown): string | undefined {
  let args: unknown = input;
  if (typeof input === "string") {
    try {
      args = JSON.parse(input);
    } catch {
      return undefined;
    }
  }
  if (typeof args !== "object" || args === null) return undefined;
  const fields = args as Record<string, unknown>;
  const title = ["filePath", "path", "command", "pattern", "query"].map((key) => fields[key]).find((v) => typeof v === "string");
  return title as string | undefined;
}

/** The entry id of a message's streamed text or reasoning. */
function streamId(turnId: string, messageId: string | null | undefined, kind: "text" | "reasoning"): string {
  return `${turnId}:${messageId ?? ""}:${kind}`;
}

export class Transcript {
  sessionId: string | undefined;
  running = false;
  entries: Entry[] = [];

  /** Fold one update in; updates of another session start a fresh transcript. */
  apply(update: Update): void {
    if (update.sessionId !== this.sessionId) {
      this.sessionId = update.sessionId;
      this.entries = [];
    }
    switch (update.kind) {
      case "status":
        if (update.status === "running") {
          this.running = true;
          this.entries.push({ type: "user", text: update.prompt ?? "" });
        } else if (update.status === "waiting for review" && update.proposalId) {
          this.entries.push({ type: "review", proposalId: update.proposalId, settled: false });
        } else if (update.status === "retrying") {
          if (update.discarded) {
            // The failed attempt's text broke off; the retry streams the message again.
            const { turnId, messageId } = update;
            this.entries = this.entries.filter(
              (e) => !((e.type === "text" || e.type === "reasoning") && e.id === streamId(turnId, messageId, e.type)),
            );
          }
          const wait = update.wait === undefined ? "" : ` in ${update.wait.toFixed(1)}s`;
          this.entries.push({ type: "status", text: `retrying${wait}${update.error ? `: ${update.error}` : ""}` });
        } else {
          this.entries.push({ type: "status", text: update.message ? `${update.status}: ${update.message}` : update.status });
        }
        break;
      case "text":
      case "reasoning": {
        const id = streamId(update.turnId, update.messageId, update.kind);
        const last = this.entries[this.entries.length - 1];
        if (last && last.type === update.kind && last.id === id) last.text += update.delta;
        else this.entries.push({ type: update.kind, id, text: update.delta });
        break;
      }
      case "toolCall": {
        const title = update.title || update.tool;
        const known = this.entries.find((e) => e.type === "tool" && e.id === update.id);
        if (known && known.type === "tool") {
          known.status = update.status;
          known.title = title;
          if (update.output !== undefined) known.output = update.output;
        } else {
          this.entries.push({ type: "tool", id: update.id, tool: update.tool, status: update.status, title });
        }
        break;
      }
      case "plan":
        this.entries.push({ type: "plan", todos: update.todos.map((t) => ({ content: t.content, status: t.status })) });
        break;
      case "turnEnd":
        this.running = false;
        for (const entry of this.entries) if (entry.type === "review") entry.settled = true;
        this.entries.push({ type: "end", stopReason: update.stopReason, ...(update.error ? { error: update.error } : {}) });
        break;
    }
  }

  /** A review link's file, once the review request has told us. */
  noteReview(proposalId: string, uri: string): void {
    const entry = this.entries.find((e) => e.type === "review" && e.proposalId === proposalId);
    if (entry && entry.type === "review") entry.uri = uri;
    else this.entries.push({ type: "review", proposalId, uri, settled: false });
  }

  settleReview(proposalId: string): void {
    for (const entry of this.entries) if (entry.type === "review" && entry.proposalId === proposalId) entry.settled = true;
  }

  /** Redraw a stored session (after picking it, or a reconnect). */
  load(history: History): void {
    this.sessionId = history.id;
    this.running = false;
    this.entries = [];
    for (const message of history.messages) {
      for (const part of message.parts) {
        if (part.kind === "text" && message.role === "user") this.entries.push({ type: "user", text: part.text ?? "" });
        else if (part.kind === "text" || part.kind === "summary")
          this.entries.push({ type: "text", id: message.id, text: part.text ?? "" });
        else if (part.kind === "reasoning") this.entries.push({ type: "reasoning", id: message.id, text: part.text ?? "" });
        else if (part.kind === "tool") {
          const status: ToolStatus = part.state === "error" ? "error" : "completed";
          const id = typeof part["call_id"] === "string" ? part["call_id"] : `${message.id}:${this.entries.length}`;
          const tool = part.tool ?? "tool";
          this.entries.push({ type: "tool", id, tool, status, title: storedTitle(part.input) ?? tool });
        } else if (part.kind === "error") this.entries.push({ type: "status", text: `error: ${part.text ?? ""}` });
      }
    }
  }
}
