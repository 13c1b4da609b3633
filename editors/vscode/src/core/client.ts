/**
 * lspilot's commands and custom messages over any {@link Rpc}: typed `workspace/executeCommand`
 * calls, and the handlers for `lspilot/update`, `lspilot/reviewEdit` and
 * `lspilot/requestPermission`. The extension and the node tests share this wiring.
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
  type RequestPermissionParams,
  type ResolveArgs,
  type ReviewEditParams,
  type Rpc,
  type SessionInfo,
  type Update,
} from "./protocol";
import type { ReviewQueue } from "./review";

export interface Handlers {
  review: ReviewQueue;
  permissions: PermissionPrompt;
  onUpdate(update: Update): void;
  /** Told of each review request as it arrives (before it is queued). */
  onReview?(params: ReviewEditParams): void;
}

export class LspilotClient {
  /** The permission prompt shown last (settled once it is answered): prompts go one at a time. */
  private prompting: Promise<unknown> = Promise.resolve();

  constructor(private readonly rpc: Rpc) {}

  /**
   * One permission prompt at a time, in arrival order: the model's tool calls of one step run
   * at once, and VS Code shows one quick pick, so a second prompt would dismiss the first (a
   * dismissed prompt stops the turn). A request withdrawn while it waits is never shown.
   */
  private askPermission(params: RequestPermissionParams, prompt: PermissionPrompt, token?: CancellationLike): Promise<PermissionReply> {
    const reply = this.prompting.then(() =>
      token?.isCancellationRequested ? { cancelled: true as const } : answerPermission(params, prompt, token),
    );
    this.prompting = reply.catch(() => undefined);
    return reply;
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
