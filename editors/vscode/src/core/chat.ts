/**
 * The chat transcript: `lspilot/update` notifications (and `lspilot.history` for a redraw)
 * folded into entries the chat view renders; and which turns run, for the status bar, cancel and
 * a second ask. Plain TypeScript.
 */
import type { AskArgs, AskResult, History, ReviewEditParams, StopReason, ToolStatus, Update } from "./protocol";
import { reviewLabel } from "./review";

export type Entry =
  | { type: "user"; text: string }
  | { type: "text"; id: string; text: string }
  | { type: "reasoning"; id: string; text: string }
  | { type: "tool"; id: string; tool: string; status: ToolStatus; title: string; detail?: string }
  | { type: "review"; proposalId: string; uri?: string; label?: string; settled: boolean }
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

/** The most lines of a tool call's detail the chat shows; the rest are counted. */
export const DETAIL_LINES = 40;

/**
 * What the chat shows under a tool call: why it failed, or the diff of the change it made, cut
 * to {@link DETAIL_LINES} lines. Other output is the model's (a read's file, a command's output):
 * not shown, and not kept (the view is sent the whole transcript on each redraw).
 */
export function toolDetail(status: string | undefined, output: unknown, metadata: unknown): string | undefined {
  const diff = typeof metadata === "object" && metadata !== null ? (metadata as Record<string, unknown>)["diff"] : undefined;
  const detail = status === "error" ? output : status === "completed" ? diff : undefined;
  if (typeof detail !== "string" || !detail.trim()) return undefined;
  const lines = detail.replace(/\n$/, "").split("\n");
  if (lines.length <= DETAIL_LINES) return lines.join("\n");
  return [...lines.slice(0, DETAIL_LINES), `… ${lines.length - DETAIL_LINES} more lines`].join("\n");
}

/** The entry id of a message's streamed text or reasoning. */
function streamId(turnId: string, messageId: string | null | undefined, kind: "text" | "reasoning"): string {
  return `${turnId}:${messageId ?? ""}:${kind}`;
}

export class Transcript {
  /** The session shown; undefined: a new one, shown once the next turn starts. */
  sessionId: string | undefined;
  running = false;
  entries: Entry[] = [];

  /**
   * Fold one update in. Updates of another session are not shown (the user picked what to look
   * at), except that a new session is shown from the start of its first turn.
   */
  apply(update: Update): void {
    if (update.sessionId !== this.sessionId) {
      const starts = update.kind === "status" && update.status === "running";
      if (this.sessionId !== undefined || !starts) return;
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
        const detail = toolDetail(update.status, update.output, update.metadata);
        const known = this.entries.find((e) => e.type === "tool" && e.id === update.id);
        if (known && known.type === "tool") {
          known.status = update.status;
          known.title = title;
          if (detail !== undefined) known.detail = detail;
        } else {
          this.entries.push({ type: "tool", id: update.id, tool: update.tool, status: update.status, title, ...(detail ? { detail } : {}) });
        }
        break;
      }
      case "plan":
        this.entries.push({ type: "plan", todos: update.todos.map((t) => ({ content: t.content, status: t.status })) });
        break;
      case "turnEnd":
        this.running = false;
        for (const entry of this.entries) if (entry.type === "review") entry.settled = true;
        this.entries.push({ type: "end", stopReason: update.stopReason, ...(this.unsaid(update.error) ? { error: update.error } : {}) });
        break;
    }
  }

  /** An error a turn ends with, unless the status line just above said it (the daemon sends both). */
  private unsaid(error: string | null | undefined): error is string {
    const last = this.entries.at(-1);
    return !!error && !(last?.type === "status" && last.text === `error: ${error}`);
  }

  /** A review link's file (and where a move takes it), once the review request has told us. */
  noteReview(params: ReviewEditParams): void {
    if (params.sessionId !== this.sessionId) return;
    const { proposalId, uri } = params;
    const label = reviewLabel(params);
    const entry = this.entries.find((e) => e.type === "review" && e.proposalId === proposalId);
    if (entry && entry.type === "review") Object.assign(entry, { uri, label });
    else this.entries.push({ type: "review", proposalId, uri, label, settled: false });
  }

  /** The turn shown stopped without its turnEnd (the daemon went away): say so. */
  stopped(error: string): void {
    if (!this.running) return;
    this.running = false;
    for (const entry of this.entries) if (entry.type === "review") entry.settled = true;
    this.entries.push({ type: "end", stopReason: "error", error });
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
          const detail = toolDetail(part.state, part.output, part["metadata"]);
          this.entries.push({ type: "tool", id, tool, status, title: storedTitle(part.input) ?? tool, ...(detail ? { detail } : {}) });
        } else if (part.kind === "error") this.entries.push({ type: "status", text: `error: ${part.text ?? ""}` });
      }
    }
  }
}

/** The refusal of an ask while a turn runs in its session. */
export const STILL_RUNNING = "a turn is still running in this chat; wait for it or cancel it";

/** The client side of asking: only `ask` of {@link LspilotClient}, so tests can wrap it. */
export interface Asker {
  ask(args: AskArgs): Promise<AskResult>;
}

/**
 * The chat's state: the transcript shown, and the turns running in any session (a turn keeps
 * running when the user looks at another session; the status bar and cancel still reach it).
 */
export class ChatState {
  readonly transcript = new Transcript();
  /** Session -> what its running turn does; the turn updated last is last. */
  private readonly turns = new Map<string, string>();

  update(update: Update): void {
    this.transcript.apply(update);
    const { sessionId } = update;
    if (update.kind === "status" && update.status === "running") this.doing(sessionId, "working");
    else if (update.kind === "toolCall" && update.status === "running") this.doing(sessionId, update.title || update.tool);
    else if (update.kind === "status" && update.status === "waiting for review") this.doing(sessionId, "waiting for review");
    else if (update.kind === "turnEnd") this.turns.delete(sessionId);
  }

  /**
   * Run a turn in the session shown (or `args.sessionId`). While a turn runs there it is refused
   * here, in words for the user, and nothing the running turn shows changes.
   */
  async ask(client: Asker, args: AskArgs): Promise<AskResult> {
    const sessionId = args.sessionId ?? this.transcript.sessionId;
    if (sessionId !== undefined && this.turns.has(sessionId)) throw new Error(STILL_RUNNING);
    let result: AskResult;
    try {
      result = await client.ask({ ...args, ...(sessionId ? { sessionId } : {}) });
    } catch (error) {
      // The daemon knew a turn runs there before this client did (its words name the session id).
      if (error instanceof Error && error.message.includes("already running")) throw new Error(STILL_RUNNING);
      throw error;
    }
    this.turns.delete(result.sessionId); // over, also if its turnEnd went missing
    return result;
  }

  /** The connection to the daemon closed: no turn runs any more. */
  closed(): void {
    this.turns.clear();
    this.transcript.stopped("the connection to the daemon closed");
  }

  /** Look at a stored session (its turn may be running). */
  show(history: History, running: boolean): void {
    this.transcript.load(history);
    this.transcript.running = running || this.turns.has(history.id);
  }

  /** Show a new session: the next ask starts it. */
  newSession(): void {
    this.transcript.sessionId = undefined;
    this.transcript.running = false;
    this.transcript.entries = [];
  }

  running(sessionId: string): boolean {
    return this.turns.has(sessionId);
  }

  /** What the status bar says: the turn updated last (undefined: no turn runs). */
  status(): string | undefined {
    const doing = [...this.turns.values()].at(-1);
    if (doing === undefined) return undefined;
    return this.turns.size > 1 ? `${doing} (+${this.turns.size - 1} more)` : doing;
  }

  /** The session cancel stops: the one shown if its turn runs, else the turn updated last. */
  cancelTarget(): string | undefined {
    const shown = this.transcript.sessionId;
    if (shown !== undefined && this.turns.has(shown)) return shown;
    return [...this.turns.keys()].at(-1);
  }

  private doing(sessionId: string, what: string): void {
    this.turns.delete(sessionId);
    this.turns.set(sessionId, what);
  }
}

/**
 * Runs `draw` at most once per `ms`: the chat view posts the whole transcript each time, and a
 * model streams tens of deltas a second, so a long session sent megabytes a second (the first
 * call draws at once; calls meanwhile make one more draw when the time is up).
 */
export function coalesce(draw: () => void, ms: number): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let again = false;
  const tick = () => {
    timer = undefined;
    if (!again) return;
    again = false;
    draw();
    timer = setTimeout(tick, ms);
  };
  return () => {
    if (timer !== undefined) {
      again = true;
      return;
    }
    draw();
    timer = setTimeout(tick, ms);
  };
}
