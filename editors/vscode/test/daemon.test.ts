/**
 * The extension's protocol and review logic against a real `lspilot serve` (real litellm, the
 * scripted model, basedpyright behind the edit tools' diagnostics).
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { CancellationTokenSource } from "vscode-jsonrpc/node";
import { ChatState, STILL_RUNNING, Transcript } from "../src/core/chat";
import { answerPlaces, utf16Column } from "../src/core/navigation";
import type { PermissionChoice, PermissionPrompt } from "../src/core/permissions";
import type { QuestionParams, RequestPermissionParams, ReviewEditParams, Update } from "../src/core/protocol";
import { reviewTitle, ReviewQueue, type Proposal } from "../src/core/review";
import { setUp, type Daemon, type ToolCall } from "./harness";

const TIMEOUT = { timeout: 150_000 };
const TWO_FUNCTIONS =
  "def area(r: float) -> float:\n    return 3.14 * r * r\n\n\ndef name() -> str:\n    return 'circle'\n";
const PROPOSAL = TWO_FUNCTIONS.replace("3.14 * r * r", "undefined_pi * r * r").replace("'circle'", "'disc'");

/** Wire the extension's core (queue, permission prompt, chat state) to the test daemon. */
function wire(daemon: Daemon, permissions: PermissionPrompt = refuseAll) {
  const queue = new ReviewQueue();
  const state = new ChatState();
  const transcript = state.transcript;
  const reviews: ReviewEditParams[] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  daemon.client.attach({
    review: queue,
    permissions,
    onUpdate: (update: Update) => state.update(update),
    onReview: (params) => {
      reviews.push(params);
      transcript.noteReview(params);
      queueMicrotask(() => waiting.filter((w) => reviews.length >= w.count).forEach((w) => w.resolve())); // queued by then
    },
  });
  /** Resolves once `count` reviews have arrived (and are queued). */
  const reviewed = (count: number) =>
    reviews.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ count, resolve }));
  return { queue, state, transcript, reviews, reviewed };
}

const refuseAll: PermissionPrompt = {
  pick: () => Promise.resolve(undefined),
  feedback: () => Promise.resolve(undefined),
};

/** A user who picks the options of `kinds` in turn, giving `feedback` to rejections. */
function scriptedUser(kinds: string[], feedback?: string) {
  const asked: RequestPermissionParams[] = [];
  const prompt: PermissionPrompt = {
    pick: (params, choices: PermissionChoice[]) => {
      asked.push(params);
      const kind = kinds.shift();
      return Promise.resolve(choices.find((c) => c.kind === kind));
    },
    feedback: () => Promise.resolve(feedback),
  };
  return { asked, prompt };
}

function onEachProposal(queue: ReviewQueue, decide: (proposal: Proposal) => void): void {
  queue.onDidChangeCurrent((proposal) => {
    if (proposal) queueMicrotask(() => decide(proposal));
  });
}

test("ask streams updates; accepting one hunk of two applies only that hunk", TIMEOUT, async () => {
  const t = await setUp({ "a.py": TWO_FUNCTIONS }, [
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["write", { filePath: "a.py", content: PROPOSAL }]] },
    { text: "Renamed things." },
  ]);
  try {
    const { queue, transcript, reviews } = wire(t.daemon);
    const uri = await t.daemon.open(path.join(t.ws, "a.py"));
    const shown: string[][] = [];
    onEachProposal(queue, (proposal) => {
      shown.push(proposal.layout().map((p) => `${p.hunk.id}@${p.line}`));
      queue.accept(proposal.id, "h1");
      assert.equal(queue.current, proposal, "one hunk still undecided: the review stays open");
      queue.reject(proposal.id, "h2");
    });

    const result = await t.daemon.client.ask({ prompt: "rename things" });
    assert.equal(result.stopReason, "end");

    const [review] = reviews;
    assert.ok(review);
    assert.equal(review.uri, uri);
    assert.deepEqual(review.hunks.map((h) => h.id), ["h1", "h2"]);
    assert.deepEqual(shown, [["h1@1", "h2@5"]]);
    assert.equal(queue.current, undefined);
    // Only the accepted hunk arrived, as a workspace/applyEdit on the open buffer.
    assert.equal(t.daemon.applied.length, 1);
    const [applied] = t.daemon.applied;
    assert.deepEqual(applied!.edits.map((e) => e.newText), [review.hunks[0]!.newText]);
    const buffer = t.daemon.buffers.get(uri)!.text;
    assert.match(buffer, /undefined_pi/);
    assert.match(buffer, /'circle'/);
    // The model was told which hunks were applied and rejected.
    const told = (await t.model.lastToolResults()).at(-1) ?? "";
    assert.match(told, /h1/);
    assert.match(told, /rejected h2/);
    // The updates tell the story: running, tool calls with status, the review, text, the end.
    const kinds = t.daemon.kinds();
    assert.equal(kinds[0], "status");
    assert.equal(kinds.at(-1), "turnEnd");
    const entries = transcript.entries;
    assert.deepEqual(entries[0], { type: "user", text: "rename things" });
    const tools = entries.filter((e) => e.type === "tool");
    assert.deepEqual(tools.map((e) => (e.type === "tool" ? [e.tool, e.status] : [])), [
      ["read", "completed"],
      ["write", "completed"],
    ]);
    assert.ok(entries.some((e) => e.type === "review" && e.uri === uri && e.settled));
    assert.ok(entries.some((e) => e.type === "text" && e.text === "Renamed things."));
    assert.deepEqual(entries.at(-1), { type: "end", stopReason: "end" });
    assert.equal(transcript.running, false);
  } finally {
    await t.close();
  }
});

test("an edited proposal goes back as finalText and is what the buffer gets", TIMEOUT, async () => {
  const t = await setUp({ "a.py": TWO_FUNCTIONS }, [
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["write", { filePath: "a.py", content: PROPOSAL }]] },
    { text: "ok" },
  ]);
  try {
    const { queue } = wire(t.daemon);
    const uri = await t.daemon.open(path.join(t.ws, "a.py"));
    const mine = PROPOSAL.replace("undefined_pi", "3.14159");
    onEachProposal(queue, (proposal) => queue.acceptAll(proposal.id, mine));
    assert.equal((await t.daemon.client.ask({ prompt: "more digits" })).stopReason, "end");
    assert.equal(t.daemon.buffers.get(uri)!.text, mine);
    const told = (await t.model.lastToolResults()).at(-1) ?? "";
    assert.match(told, /changed|edited|modified/i);
  } finally {
    await t.close();
  }
});

test("a rejected file writes nothing and the model reads the feedback", TIMEOUT, async () => {
  const t = await setUp({ "a.py": TWO_FUNCTIONS }, [
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["edit", { filePath: "a.py", oldString: "3.14", newString: "22 / 7" }]] },
    { text: "keeping 3.14" },
  ]);
  try {
    const { queue } = wire(t.daemon);
    await t.daemon.open(path.join(t.ws, "a.py"));
    onEachProposal(queue, (proposal) => queue.rejectAll(proposal.id, "use math.pi instead"));
    assert.equal((await t.daemon.client.ask({ prompt: "approximate pi" })).stopReason, "end");
    assert.deepEqual(t.daemon.applied, []);
    assert.match((await t.model.lastToolResults()).at(-1) ?? "", /use math\.pi instead/);
  } finally {
    await t.close();
  }
});

test("questions: the user's own words and a suggested answer reach the model", TIMEOUT, async () => {
  type Calls = [string, Record<string, unknown>][];
  const t = await setUp({ "a.py": TWO_FUNCTIONS }, [
    { tool_calls: [["question", { question: "Which database?" }]] as Calls },
    { tool_calls: [["question", { question: "Port?", options: ["5432", "3306"] }]] as Calls },
    { tool_calls: [["question", { question: "Sure?" }]] as Calls },
    { text: "done" },
  ]);
  try {
    const asked: QuestionParams[] = [];
    const answers = ["SQLite, in a file", "3306", undefined];
    const questions = { ask: async (params: QuestionParams) => (asked.push(params), answers.shift()) };
    t.daemon.client.attach({ review: new ReviewQueue(), permissions: refuseAll, questions, onUpdate: () => undefined });
    assert.equal((await t.daemon.client.ask({ prompt: "set up the database" })).stopReason, "end");
    assert.deepEqual(
      asked.map((q) => [q.question, q.options]),
      [["Which database?", []], ["Port?", ["5432", "3306"]], ["Sure?", []]],
    );
    const told = await t.model.lastToolResults();
    assert.match(told.at(-3) ?? "", /SQLite, in a file/);
    assert.match(told.at(-2) ?? "", /3306/);
    assert.match(told.at(-1) ?? "", /dismissed the question/);
  } finally {
    await t.close();
  }
});

test("permissions: always is remembered, a reject with feedback reaches the model", TIMEOUT, async () => {
  const readEnv = { tool_calls: [["read", { filePath: ".env" }]] as [string, Record<string, unknown>][] };
  const t = await setUp({ "a.py": TWO_FUNCTIONS, ".env": "TOKEN=not-for-models\n" }, [
    readEnv,
    { text: "read it" },
    readEnv,
    { text: "again" },
  ]);
  try {
    const user = scriptedUser(["allow_always"]);
    wire(t.daemon, user.prompt);
    const first = await t.daemon.client.ask({ prompt: "read .env" });
    assert.equal(first.stopReason, "end");
    assert.equal(user.asked.length, 1);
    const [ask] = user.asked;
    assert.equal(ask!.permission, "read");
    assert.deepEqual(ask!.patterns, [".env"]);
    assert.match((await t.model.lastToolResults()).at(-1) ?? "", /TOKEN=not-for-models/);
    const second = await t.daemon.client.ask({ sessionId: first.sessionId, prompt: "again" });
    assert.equal(second.stopReason, "end");
    assert.equal(user.asked.length, 1, "allow_always was remembered");
  } finally {
    await t.close();
  }

  const r = await setUp({ "a.py": TWO_FUNCTIONS, ".env": "TOKEN=not-for-models\n" }, [readEnv, { text: "understood" }]);
  try {
    const user = scriptedUser(["reject_once"], "secrets stay private");
    wire(r.daemon, user.prompt);
    assert.equal((await r.daemon.client.ask({ prompt: "read .env" })).stopReason, "end");
    const told = (await r.model.lastToolResults()).at(-1) ?? "";
    assert.match(told, /secrets stay private/);
    assert.doesNotMatch(told, /not-for-models/);
  } finally {
    await r.close();
  }
});

test("two permission prompts at once are asked one after the other", TIMEOUT, async () => {
  // The model's two reads run at once; VS Code shows one quick pick at a time, a second one
  // dismisses the first (which stopped the turn). This prompt behaves the same way.
  const files = { ".env": "TOKEN=one\n", "prod.env": "TOKEN=two\n" };
  const reads: ToolCall[] = [["read", { filePath: ".env" }], ["read", { filePath: "prod.env" }]];
  const t = await setUp(files, [{ tool_calls: reads }, { text: "read both" }]);
  try {
    let open: ((choice: PermissionChoice | undefined) => void) | undefined;
    const asked: string[] = [];
    const user: PermissionPrompt = {
      pick: (params, choices) =>
        new Promise((resolve) => {
          open?.(undefined); // a quick pick replaced is dismissed
          open = resolve;
          asked.push(params.patterns.join());
          // The user takes a moment to read it (a second request arrives meanwhile), then allows.
          setTimeout(() => resolve(choices.find((c) => c.kind === "allow_once")), 500);
        }),
      feedback: () => Promise.resolve(undefined),
    };
    wire(t.daemon, user);
    assert.equal((await t.daemon.client.ask({ prompt: "read the env files" })).stopReason, "end");
    assert.deepEqual(asked.sort(), [".env", "prod.env"]);
    const told = (await t.model.lastToolResults()).join("\n");
    assert.match(told, /TOKEN=one/);
    assert.match(told, /TOKEN=two/);
  } finally {
    await t.close();
  }
});

test("a dismissed permission prompt stops the turn", TIMEOUT, async () => {
  const t = await setUp({ ".env": "TOKEN=x\n" }, [{ tool_calls: [["read", { filePath: ".env" }]] }]);
  try {
    wire(t.daemon, refuseAll);
    assert.equal((await t.daemon.client.ask({ prompt: "read .env" })).stopReason, "rejected");
  } finally {
    await t.close();
  }
});

test("a permission prompt still open when its turn is cancelled is withdrawn", TIMEOUT, async () => {
  const t = await setUp({ ".env": "TOKEN=x\n" }, [{ tool_calls: [["read", { filePath: ".env" }]] }]);
  try {
    let asked: () => void = () => undefined;
    const prompted = new Promise<void>((resolve) => (asked = resolve));
    let withdrawn = false;
    const user: PermissionPrompt = {
      pick: (_params, _choices, token) =>
        new Promise((resolve) => {
          token?.onCancellationRequested(() => {
            withdrawn = true;
            resolve(undefined);
          });
          asked(); // ...and the user walks away
        }),
      feedback: () => Promise.resolve(undefined),
    };
    wire(t.daemon, user);
    const asking = t.daemon.client.ask({ prompt: "read .env" });
    await prompted;
    assert.deepEqual(await t.daemon.client.cancel(t.daemon.updates[0]!.sessionId), { cancelled: true });
    assert.equal((await asking).stopReason, "cancelled");
    assert.ok(withdrawn, "the prompt was told the request is gone (VS Code closes the quick pick)");
  } finally {
    await t.close();
  }
});

test("a permission prompt open when the daemon dies is closed", TIMEOUT, async () => {
  const t = await setUp({ ".env": "TOKEN=x\n" }, [{ tool_calls: [["read", { filePath: ".env" }]] }]);
  try {
    let asked: () => void = () => undefined;
    const prompted = new Promise<void>((resolve) => (asked = resolve));
    let closed = false;
    const user: PermissionPrompt = {
      pick: (_params, _choices, token) =>
        new Promise((resolve) => {
          token?.onCancellationRequested(() => {
            closed = true;
            resolve(undefined);
          });
          asked();
        }),
      feedback: () => Promise.resolve(undefined),
    };
    wire(t.daemon, user);
    t.daemon.client.ask({ prompt: "read .env" }).catch(() => undefined);
    await prompted;
    await t.daemon.kill();
    // A closed connection drops its requests' tokens without cancelling them: the quick pick
    // stayed open for a daemon that was gone. The extension withdraws it as its client stops.
    assert.equal(closed, false);
    t.daemon.client.withdrawPrompts();
    assert.ok(closed, "the prompt was closed");
  } finally {
    await t.close();
  }
});

test("cancel stops a running turn, by lspilot.cancel and by $/cancelRequest", TIMEOUT, async () => {
  const t = await setUp({ "a.py": TWO_FUNCTIONS }, [
    { text: "thinking it over", stall_after_chunks: 2 },
    { text: "thinking again", stall_after_chunks: 2 },
  ]);
  try {
    const { transcript } = wire(t.daemon);
    const asking = t.daemon.client.ask({ prompt: "take your time" });
    await t.daemon.until(() => t.daemon.kinds().includes("text"), "streamed text");
    assert.equal(transcript.running, true);
    const sessionId = t.daemon.updates[0]!.sessionId;
    assert.deepEqual(await t.daemon.client.cancel(sessionId), { cancelled: true });
    const result = await asking;
    assert.equal(result.stopReason, "cancelled");
    assert.equal(transcript.running, false);
    const [listed] = await t.daemon.client.sessions();
    assert.equal(listed!.sessionId, sessionId);
    assert.equal(listed!.running, false);

    const source = new CancellationTokenSource();
    const before = t.daemon.updates.length;
    const again = t.daemon.client.ask({ sessionId, prompt: "once more" }, source.token);
    await t.daemon.until(() => t.daemon.updates.slice(before).some((u) => u.kind === "text"), "text again");
    source.cancel();
    await assert.rejects(again, /cancel/i);
    await t.daemon.until(() => t.daemon.kinds().at(-1) === "turnEnd", "the turn's end");
    const end = t.daemon.updates.at(-1)!;
    assert.ok(end.kind === "turnEnd" && end.stopReason === "cancelled");
    // The session can be redrawn from history.
    const history = await t.daemon.client.history(sessionId);
    const redraw = new Transcript();
    redraw.load(history);
    assert.deepEqual(redraw.entries.filter((e) => e.type === "user").map((e) => e.type === "user" && e.text), [
      "take your time",
      "once more",
    ]);
  } finally {
    await t.close();
  }
});

test("the daemon dying mid-turn ends the turn shown; no turn runs after", TIMEOUT, async () => {
  const t = await setUp({}, [{ text: "thinking it over", stall_after_chunks: 2 }]);
  try {
    const { state } = wire(t.daemon);
    const asking = state.ask(t.daemon.client, { prompt: "take your time" });
    asking.catch(() => undefined); // the request is rejected once the connection is disposed
    await t.daemon.until(() => t.daemon.kinds().includes("text"), "streamed text");
    assert.equal(state.transcript.running, true);
    assert.equal(state.status(), "working");
    t.daemon.connection.onClose(() => state.closed()); // as the extension hears its client stop
    await t.daemon.kill();
    assert.equal(state.transcript.running, false, "the chat no longer shows working…");
    const end = { type: "end", stopReason: "error", error: "the connection to the daemon closed" };
    assert.deepEqual(state.transcript.entries.at(-1), end);
    assert.equal(state.status(), undefined);
  } finally {
    await t.close();
  }
});

test("a turn runs on while the user looks at another session; a second ask there is refused in words", TIMEOUT, async () => {
  const t = await setUp({}, [{ text: "one" }, { text: "thinking it over", stall_after_chunks: 2 }]);
  try {
    const { state } = wire(t.daemon);
    const first = await state.ask(t.daemon.client, { prompt: "first" });
    state.newSession();
    const asking = state.ask(t.daemon.client, { prompt: "second" });
    const streamed = () => t.daemon.updates.some((u) => u.kind === "text" && u.sessionId !== first.sessionId);
    await t.daemon.until(streamed, "the second session's text");
    const second = state.transcript.sessionId;
    assert.ok(second && second !== first.sessionId, "the new session is shown from its first turn");
    // Asking again in the running session is refused, in words; the running turn's status stays.
    await assert.rejects(state.ask(t.daemon.client, { prompt: "and now?" }), { message: STILL_RUNNING });
    assert.equal(state.status(), "working");
    // The daemon's refusal (of a turn this state did not know of) reads the same.
    const unaware = new ChatState().ask(t.daemon.client, { sessionId: second, prompt: "and now?" });
    await assert.rejects(unaware, { message: STILL_RUNNING });
    // The user looks at the first session: the running turn's updates leave it shown.
    state.show(await t.daemon.client.history(first.sessionId), false);
    const shown = JSON.stringify(state.transcript.entries);
    assert.ok(shown.includes('"one"'), shown);
    assert.equal(state.status(), "working");
    assert.equal(state.cancelTarget(), second, "cancel still reaches the running turn");
    assert.deepEqual(await t.daemon.client.cancel(second), { cancelled: true });
    assert.equal((await asking).stopReason, "cancelled");
    await t.daemon.until(() => t.daemon.kinds().at(-1) === "turnEnd", "the turn's end");
    assert.equal(state.transcript.sessionId, first.sessionId);
    assert.equal(JSON.stringify(state.transcript.entries), shown);
    assert.equal(state.transcript.running, false);
    assert.equal(state.status(), undefined);
  } finally {
    await t.close();
  }
});

test("a queued review opened from its link is answered first; the other turn waits on", TIMEOUT, async () => {
  const t = await setUp({ "a.py": TWO_FUNCTIONS, "b.py": "x = 1\n" }, [
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["edit", { filePath: "a.py", oldString: "3.14", newString: "22 / 7" }]] },
    { tool_calls: [["read", { filePath: "b.py" }]] },
    { tool_calls: [["edit", { filePath: "b.py", oldString: "x = 1", newString: "x = 2" }]] },
    { text: "b done" },
    { text: "a done" },
  ]);
  try {
    const { queue, state, reviewed } = wire(t.daemon);
    const a = await t.daemon.open(path.join(t.ws, "a.py"));
    const b = await t.daemon.open(path.join(t.ws, "b.py"));
    const first = t.daemon.client.ask({ prompt: "approximate pi" });
    await reviewed(1);
    state.newSession();
    const second = t.daemon.client.ask({ prompt: "bump x" }); // another session
    await reviewed(2);
    const [under, queued] = queue.proposals;
    assert.equal(queued!.params.uri, b);
    const opened = queue.toOpen(queued!.id); // the chat's review link
    assert.ok("proposal" in opened && opened.proposal === queued);
    assert.equal(queue.current, queued, "the diff opened is the one the buttons answer");
    queue.acceptAll(queued!.id);
    assert.equal((await second).stopReason, "end");
    assert.equal(t.daemon.buffers.get(b)!.text, "x = 2\n");
    assert.equal(queue.current, under, "the displaced review is shown again");
    assert.equal(t.daemon.buffers.get(a)!.text, TWO_FUNCTIONS, "and still waits for the user");
    queue.acceptAll(under!.id);
    assert.equal((await first).stopReason, "end");
    assert.match(t.daemon.buffers.get(a)!.text, /22 \/ 7/);
  } finally {
    await t.close();
  }
});

test("a move's review names where the file goes, a deletion's says it deletes", TIMEOUT, async () => {
  const patch = [
    "*** Begin Patch",
    "*** Update File: a.py",
    "*** Move to: shapes.py",
    "@@",
    "-    return 'circle'",
    "+    return 'disc'",
    "*** Delete File: b.py",
    "*** End Patch",
  ].join("\n");
  const t = await setUp({ "a.py": TWO_FUNCTIONS, "b.py": "x = 1\n" }, [
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["read", { filePath: "b.py" }]] },
    { tool_calls: [["apply_patch", { patchText: patch }]] },
    { text: "moved" },
  ]);
  try {
    const { queue, state } = wire(t.daemon);
    const titles: string[] = [];
    onEachProposal(queue, (proposal) => {
      titles.push(reviewTitle(proposal.params));
      queue.acceptAll(proposal.id);
    });
    assert.equal((await state.ask(t.daemon.client, { prompt: "move a.py, drop b.py" })).stopReason, "end");
    assert.deepEqual(titles.sort(), ["lspilot: a.py → shapes.py (proposed move)", "lspilot: b.py (proposed deletion)"]);
    const links = state.transcript.entries.flatMap((e) => (e.type === "review" ? [e.label] : []));
    assert.deepEqual(links.sort(), ["a.py → shapes.py", "b.py (deletion)"]);
  } finally {
    await t.close();
  }
});

test("a session redrawn from its history shows its tool calls and errors as they were shown live", TIMEOUT, async () => {
  const t = await setUp({ "a.py": TWO_FUNCTIONS }, [
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["grep", { pattern: "circle" }]] },
    { text: "It computes an area." },
    { error: 401 },
  ]);
  try {
    const { transcript } = wire(t.daemon);
    const result = await t.daemon.client.ask({ prompt: "what does a.py do?" });
    const failed = await t.daemon.client.ask({ sessionId: result.sessionId, prompt: "and b.py?" });
    assert.equal(failed.stopReason, "error");
    const redraw = new Transcript();
    redraw.load(await t.daemon.client.history(result.sessionId));
    const tools = (entries: typeof transcript.entries) =>
      entries.flatMap((e) => (e.type === "tool" ? [[e.id, e.tool, e.title, e.status]] : []));
    assert.deepEqual(tools(redraw.entries), tools(transcript.entries));
    assert.deepEqual(tools(redraw.entries).map((e) => e[2]), ["a.py", "circle"]);
    const last = redraw.entries.at(-1); // the failed turn says so, as it did live
    assert.ok(last?.type === "status" && last.text.startsWith("error: "), JSON.stringify(last));
  } finally {
    await t.close();
  }
});

test("a retry after a broken stream drops the broken-off text from the chat", TIMEOUT, async () => {
  const t = await setUp({}, [{ text: "This answer breaks off somewhere in the middle.", cut_after_chunks: 2 }, { text: "The whole answer." }]);
  try {
    const { transcript } = wire(t.daemon);
    const result = await t.daemon.client.ask({ prompt: "explain" });
    assert.equal(result.stopReason, "end");
    const retry = t.daemon.updates.find((u) => u.kind === "status" && u.status === "retrying");
    assert.ok(retry && retry.kind === "status" && retry.discarded, JSON.stringify(retry));
    assert.ok(t.daemon.updates.some((u) => u.kind === "text" && u.delta.startsWith("This answer")), "the broken text streamed");
    const shown = transcript.entries.map((e) => (e.type === "text" ? `text: ${e.text}` : e.type));
    assert.deepEqual(shown, ["user", "status", "text: The whole answer.", "end"]);
    const status = transcript.entries[1];
    assert.ok(status?.type === "status" && /^retrying in \d/.test(status.text), JSON.stringify(status));
  } finally {
    await t.close();
  }
});

test("navigate answers become places for VS Code's references view", TIMEOUT, async () => {
  // c.py: a reference after characters outside the BMP, whose columns differ in UTF-16.
  const c = 'from a import area\n\nlabel = "\u{1F600}\u{1F600} \u00e9"; n = area(1)\n';
  const files = { "a.py": "def area(r):\n    return 3.14 * r * r\n", "b.py": "from a import area\n\nprint(area(2))\n", "c.py": c };
  const t = await setUp(files, []);
  try {
    const uri = await t.daemon.open(path.join(t.ws, "a.py"));
    const answer = await t.daemon.client.navigate({ operation: "findReferences", uri, position: { line: 0, character: 4 } });
    const linesOf = (file: string) => readFileSync(file, "utf8").split("\n");
    const places = answerPlaces(t.ws, answer, linesOf).map((p) => [path.relative(t.ws, p.file), p.range.start.line, p.range.start.character]);
    const line = c.split("\n")[2];
    for (const expected of [["a.py", 0, 4], ["b.py", 0, 14], ["b.py", 2, 6], ["c.py", 2, line.indexOf("area")]]) {
      assert.ok(places.some((p) => String(p) === String(expected)), `${String(expected)} in ${JSON.stringify(places)}`);
    }
    assert.notEqual([...line.slice(0, line.indexOf("area"))].length, line.indexOf("area")); // the units differ there
  } finally {
    await t.close();
  }
});

test("following: the daemon shows each place the agent reads or finds, focus kept", TIMEOUT, async () => {
  const files = { "a.py": "s = '\u{1F600}'; y = 1\nprint(y)\n", "b.py": "one\ntwo\nthree\n" };
  const references = { operation: "findReferences", filePath: "a.py", symbol: "y" };
  const turns = [
    { tool_calls: [["read", { filePath: "b.py" }]] as ToolCall[] },
    { text: "not following" },
    { tool_calls: [["read", { filePath: "b.py", offset: 2 }]] as ToolCall[] },
    { tool_calls: [["lsp", references]] as ToolCall[] },
    { text: "following" },
  ];
  const t = await setUp(files, turns);
  try {
    wire(t.daemon);
    const first = await t.daemon.client.ask({ prompt: "read b.py" });
    assert.deepEqual(await t.daemon.client.follow(true), { enabled: true });
    await t.daemon.client.ask({ sessionId: first.sessionId, prompt: "where is y used?" });
    await t.daemon.until(() => t.daemon.shown.length === 2, "two places shown");
    const where = t.daemon.shown.map((s) => [path.basename(s.uri), s.takeFocus, s.selection?.start, s.selection?.end]);
    assert.deepEqual(where, [
      ["b.py", false, { line: 1, character: 0 }, { line: 1, character: 0 }],
      ["a.py", false, { line: 0, character: 10 }, { line: 0, character: 11 }], // y after 😀: UTF-16
    ]);
    assert.deepEqual(await t.daemon.client.follow(false), { enabled: false });
  } finally {
    await t.close();
  }
});

test("columns in characters become UTF-16 columns", () => {
  assert.equal(utf16Column("a\u{1F600}b", 2), 3);
  assert.equal(utf16Column("\u00e9x", 1), 1);
  assert.equal(utf16Column("ab", 5), 5); // past the end: kept
  assert.equal(utf16Column(undefined, 3), 3);
});
