/**
 * lspilot's commands and custom messages over any {@link Rpc}: typed `workspace/executeCommand`
 * calls, and the handlers for `lspilot/update`, `lspilot/reviewEdit`, `lspilot/requestPermission`
 * and `lspilot/question`. The extension and the node tests share this wiring.
 */
import { answerPermission, type PermissionPrompt } from "./permissions";
import {
  Commands,
  Methods,
  type AskArgs,
  type AskResult,
  type CancellationLike,
  type DisposableLike,
  type History,
  type NavigateAnswer,
  type NavigateArgs,
  type PermissionReply,
  type QuestionParams,
  type QuestionReply,
  type RequestPermissionParams,
  type ResolveArgs,
  type ReviewEditParams,
  type Rpc,
  type SessionInfo,
  type Update,
} from "./protocol";
import type { ReviewQueue } from "./review";

/** Asks the user the agent's question: one of its options or their own words; undefined if dismissed. */
export interface QuestionPrompt {
  ask(params: QuestionParams, token?: CancellationLike): Promise<string | undefined>;
}

export interface Handlers {
  review: ReviewQueue;
  permissions: PermissionPrompt;
  /** Without it, questions are answered as dismissed. */
  questions?: QuestionPrompt;
  onUpdate(update: Update): void;
  /** Told of each review request as it arrives (before it is queued). */
  onReview?(params: ReviewEditParams): void;
}

/**
 * A prompt's cancellation: the daemon withdrew the request, or its connection is gone (a
 * closed connection drops its requests' tokens without cancelling them).
 */
class Withdrawal implements CancellationLike {
  isCancellationRequested = false;
  private listeners: (() => void)[] = [];

  constructor(token?: CancellationLike) {
    token?.onCancellationRequested(() => this.cancel());
    if (token?.isCancellationRequested) this.cancel();
  }

  onCancellationRequested(listener: () => void): DisposableLike {
    if (this.isCancellationRequested) listener();
    else this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }

  cancel(): void {
    if (this.isCancellationRequested) return;
    this.isCancellationRequested = true;
    for (const listener of this.listeners.splice(0)) listener();
  }
}

export class LspilotClient {
  /** The prompt shown last (settled once it is answered): prompts go one at a time. */
  private prompting: Promise<unknown> = Promise.resolve();
  /** Prompts open or waiting in line. */
  private readonly prompts = new Set<Withdrawal>();

  constructor(private readonly rpc: Rpc) {}

  /**
   * One prompt (a permission, a question) at a time, in arrival order: the model's tool calls of
   * one step run at once, and VS Code shows one quick pick, so a second prompt would dismiss the
   * first (a dismissed permission prompt stops the turn). A request withdrawn while it waits is
   * never shown.
   */
  private inLine<T>(token: CancellationLike | undefined, show: (withdrawal: Withdrawal) => Promise<T>, withdrawn: T): Promise<T> {
    const withdrawal = new Withdrawal(token);
    this.prompts.add(withdrawal);
    const reply = this.prompting
      .then(() => (withdrawal.isCancellationRequested ? withdrawn : show(withdrawal)))
      .finally(() => this.prompts.delete(withdrawal));
    this.prompting = reply.catch(() => undefined);
    return reply;
  }

  private askPermission(params: RequestPermissionParams, prompt: PermissionPrompt, token?: CancellationLike): Promise<PermissionReply> {
    const cancelled: PermissionReply = { cancelled: true };
    return this.inLine(token, (withdrawal) => answerPermission(params, prompt, withdrawal), cancelled);
  }

  private askQuestion(params: QuestionParams, prompt: QuestionPrompt | undefined, token?: CancellationLike): Promise<QuestionReply> {
    const cancelled: QuestionReply = { cancelled: true };
    return this.inLine(
      token,
      async (withdrawal) => {
        const answer = await prompt?.ask(params, withdrawal);
        return answer?.trim() ? { answer } : cancelled;
      },
      cancelled,
    );
  }

  /** The daemon is gone (stopped, crashed, restarting): close its prompts. */
  withdrawPrompts(): void {
    for (const withdrawal of [...this.prompts]) withdrawal.cancel();
  }

  /** Route the daemon's notifications and requests to `handlers`. */
  attach(handlers: Handlers): DisposableLike[] {
    return [
      this.rpc.onNotification(Methods.update, (params) => handlers.onUpdate(params as Update)),
      this.rpc.onRequest(Methods.reviewEdit, (params, token) => {
        const review = params as ReviewEditParams;
        handlers.onReview?.(review);
        return handlers.review.enqueue(review, token);
      }),
      this.rpc.onRequest(Methods.requestPermission, (params, token) =>
        this.askPermission(params as RequestPermissionParams, handlers.permissions, token),
      ),
      this.rpc.onRequest(Methods.question, (params, token) => this.askQuestion(params as QuestionParams, handlers.questions, token)),
    ];
  }

  /** Runs a turn; resolves when it ends. `token` cancels it through `$/cancelRequest`. */
  ask(args: AskArgs, token?: unknown): Promise<AskResult> {
    return this.command<AskResult>(Commands.ask, args, token);
  }

  cancel(sessionId: string): Promise<{ cancelled: boolean }> {
    return this.command(Commands.cancel, { sessionId });
  }

  sessions(): Promise<SessionInfo[]> {
    return this.command(Commands.sessions);
  }

  history(sessionId: string): Promise<History> {
    return this.command(Commands.history, { sessionId });
  }

  navigate(args: NavigateArgs): Promise<NavigateAnswer> {
    return this.command(Commands.navigate, args);
  }

  resolve(args: ResolveArgs): Promise<{ resolved: boolean }> {
    return this.command(Commands.resolve, args);
  }

  /** Follow the agent (the daemon sends `window/showDocument` for each place) or stop. */
  follow(enabled: boolean): Promise<{ enabled: boolean }> {
    return this.command(Commands.follow, { enabled });
  }

  private async command<T>(command: string, argument?: unknown, token?: unknown): Promise<T> {
    const params = { command, arguments: argument === undefined ? [] : [argument] };
    return (await this.rpc.sendRequest(Methods.executeCommand, params, token)) as T;
  }
}
