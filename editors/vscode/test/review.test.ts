/** Review bookkeeping and permission answers in plain node (no daemon). */
import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { coalesce } from "../src/core/chat";
import { permissionChoices, permissionReply } from "../src/core/permissions";
import type { CancellationLike, RequestPermissionParams, ReviewEditParams } from "../src/core/protocol";
import { applyHunks, Proposal, proposedName, queuedNote, reviewTitle, ReviewQueue } from "../src/core/review";

const OLD = "a\nb\nc\nd\ne\n";
const NEW = "A\nb\nc\nd\nE1\nE2\n";

function params(proposalId: string): ReviewEditParams {
  return {
    sessionId: "s",
    toolCallId: "t",
    proposalId,
    uri: "file:///x.py",
    newUri: null,
    baseVersion: 1,
    isNewFile: false,
    isDeletion: false,
    oldText: OLD,
    newText: NEW,
    hunks: [
      { id: "h1", oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, oldText: "a\n", newText: "A\n" },
      { id: "h2", oldStart: 5, oldLines: 1, newStart: 5, newLines: 2, oldText: "e\n", newText: "E1\nE2\n" },
    ],
  };
}

/** A request's cancellation token, and what cancels it (the daemon's $/cancelRequest). */
function cancellable(): { token: CancellationLike; cancel: () => void } {
  let cancel = () => {};
  const token: CancellationLike = {
    isCancellationRequested: false,
    onCancellationRequested: (listener) => {
      cancel = listener;
      return { dispose: () => {} };
    },
  };
  return { token, cancel: () => cancel() };
}

test("replies: accept, reject, partial, and the proposed side as hunks are decided", () => {
  const all = new Proposal(params("p"));
  assert.equal(applyHunks(OLD, all.hunks, () => true), NEW);
  all.acceptAll();
  assert.deepEqual(all.reply(), { decision: "accept" });

  const some = new Proposal(params("p"));
  some.reject("h1");
  assert.equal(some.proposedText(), "a\nb\nc\nd\nE1\nE2\n");
  assert.deepEqual(some.layout().map((p) => [p.hunk.id, p.line, p.lines]), [["h2", 4, 2]]);
  some.accept("h2");
  assert.ok(some.decided);
  assert.deepEqual(some.reply(), { decision: "partial", acceptedHunkIds: ["h2"] });

  const none = new Proposal(params("p"));
  none.rejectAll();
  assert.deepEqual(none.reply("no thanks"), { decision: "reject", feedback: "no thanks" });
  assert.throws(() => none.accept("h9"), /no hunk h9/);
});

test("an edited proposed side is sent as finalText; rejecting a hunk reverts only its lines", () => {
  const p = new Proposal(params("p"));
  const edited = "A\nb\nc!\nd\nE1\nE2\n";
  p.reject("h2", edited);
  assert.equal(p.sideText(), "A\nb\nc!\nd\ne\n");
  p.accept("h1");
  assert.deepEqual(p.reply(), { decision: "accept", finalText: "A\nb\nc!\nd\ne\n" });

  const unchanged = new Proposal(params("p"));
  unchanged.acceptAll(NEW); // the side holds exactly the proposal: no finalText
  assert.deepEqual(unchanged.reply(), { decision: "accept" });
});

test("rejecting a hunk after editing the proposed side elsewhere reverts that hunk where it moved to", () => {
  const p = new Proposal(params("p"));
  const edited = "# a note\nA\nb\nc\nd\nE1\nE2\n"; // a line added above both hunks
  assert.deepEqual(p.sideLayout(), p.layout()); // nothing edited yet
  p.noteProposedSide(edited);
  assert.deepEqual(p.sideLayout().map((place) => [place.hunk.id, place.line]), [["h1", 1], ["h2", 5]]);
  p.reject("h2", edited);
  assert.equal(p.sideText(), "# a note\nA\nb\nc\nd\ne\n");
  p.accept("h1");
  assert.deepEqual(p.reply(), { decision: "accept", finalText: "# a note\nA\nb\nc\nd\ne\n" });

  // A hunk that deletes a line: rejected, the line comes back where it was, not lines above it.
  const deletion: ReviewEditParams = {
    ...params("d"),
    oldText: "a\nb\nc\n",
    newText: "a\nc\n",
    hunks: [{ id: "h1", oldStart: 2, oldLines: 1, newStart: 2, newLines: 0, oldText: "b\n", newText: "" }],
  };
  const d = new Proposal(deletion);
  d.reject("h1", "x\na\nc\n");
  assert.equal(d.sideText(), "x\na\nb\nc\n");

  // The user edited the hunk's own lines: their text stands.
  const own = new Proposal(params("o"));
  own.reject("h2", "A\nb\nc\nd\nE1!\nE2\n");
  assert.equal(own.sideText(), "A\nb\nc\nd\nE1!\nE2\n");
});

test("a file with mixed line endings: the proposed side, read back with VS Code's one ending, is no edit", () => {
  // Lines 1-2 end in CRLF, the rest in LF; VS Code holds the proposed side with LF only.
  const mixed: ReviewEditParams = {
    ...params("m"),
    oldText: "a\r\nb\r\nc\nd\ne\n",
    newText: "A\r\nb\r\nc\nd\nE1\nE2\n",
    hunks: [
      { id: "h1", oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, oldText: "a\r\n", newText: "A\r\n" },
      { id: "h2", oldStart: 5, oldLines: 1, newStart: 5, newLines: 2, oldText: "e\n", newText: "E1\nE2\n" },
    ],
  };
  const lf = (text: string) => text.replaceAll("\r\n", "\n");
  const p = new Proposal(mixed);
  p.reject("h1", lf(mixed.newText)); // a CRLF hunk in an LF document: its lines go back all the same
  assert.equal(p.editedText, undefined);
  p.accept("h2", lf(p.proposedText()));
  assert.deepEqual(p.reply(), { decision: "partial", acceptedHunkIds: ["h2"] });

  const typed = new Proposal(mixed); // a real edit is still one, and a rejected hunk still reverts
  typed.reject("h1", lf(mixed.newText).replace("d\n", "d!\n"));
  assert.equal(typed.sideText(), "a\r\nb\nc\nd!\nE1\nE2\n");
});

test("the hunk at the cursor: at its lines on the proposed side, at its old lines on the original side", () => {
  // OLD's line 4 ("e") is h2's on the original side; the proposal gained a line there (E1, E2).
  const p = new Proposal(params("p"));
  assert.deepEqual([0, 1, 4, 5].map((line) => p.pendingAt(line, "proposed")), ["h1", "h2", "h2", "h2"]);
  assert.deepEqual([0, 1, 4].map((line) => p.pendingAt(line, "original")), ["h1", "h2", "h2"]);
  p.accept("h1");
  assert.equal(p.pendingAt(0, "original"), "h2"); // the next pending one
});

test("proposals queue: one under review at a time, in arrival order; cancelled ones drop out", async () => {
  const queue = new ReviewQueue();
  const shown: (string | undefined)[] = [];
  queue.onDidChangeCurrent((p) => shown.push(p?.id));
  const { token, cancel } = cancellable();
  const first = queue.enqueue(params("p1"));
  const second = queue.enqueue(params("p2"), token);
  const third = queue.enqueue(params("p3"));
  assert.deepEqual(shown, ["p1"]);
  assert.deepEqual(queue.proposals.map((p) => p.id), ["p1", "p2", "p3"]);

  queue.accept("p1", "h1");
  assert.equal(queue.current?.id, "p1");
  queue.reject("p1", "h2");
  assert.deepEqual(await first, { decision: "partial", acceptedHunkIds: ["h1"] });
  assert.deepEqual(shown, ["p1", "p2"]);

  cancel(); // the daemon settled p2 another way (lspilot.resolve) or went away
  assert.deepEqual(await second, { decision: "cancelled" });
  assert.deepEqual(shown, ["p1", "p2", "p3"]);

  queue.submit("p3"); // answered with nothing accepted
  assert.deepEqual(await third, { decision: "reject" });
  assert.deepEqual(shown, ["p1", "p2", "p3", undefined]);
  assert.throws(() => queue.accept("p3", "h1"), /no proposal p3/);
});

test("the count of reviews waiting behind the one under review follows arrivals and answers out of order", async () => {
  const queue = new ReviewQueue();
  const counts: number[] = [];
  queue.onDidChangeWaiting((waiting) => counts.push(waiting));
  const { token, cancel } = cancellable();
  const first = queue.enqueue(params("p1"));
  assert.deepEqual([queue.waiting, counts], [0, []]);
  const second = queue.enqueue(params("p2"), token); // while p1 is under review
  void queue.enqueue(params("p3"));
  assert.deepEqual([queue.waiting, counts], [2, [1, 2]]);
  cancel(); // p2, waiting, ends before the one under review
  assert.deepEqual(await second, { decision: "cancelled" });
  assert.equal(queue.current?.id, "p1");
  assert.deepEqual([queue.waiting, counts], [1, [1, 2, 1]]);
  queue.rejectAll("p1");
  await first;
  assert.equal(queue.current?.id, "p3");
  assert.deepEqual([queue.waiting, counts], [0, [1, 2, 1, 0]]);
  queue.acceptAll("p3");
  assert.deepEqual(counts, [1, 2, 1, 0], "none left: still none waiting");
});

test("permission choices come in a fixed order; feedback only travels with a rejection", () => {
  const request: RequestPermissionParams = {
    sessionId: "s",
    toolCallId: "t",
    permission: "bash",
    patterns: ["rm -rf build"],
    title: "run rm -rf build",
    options: [
      { optionId: "reject_always", name: "Reject always", kind: "reject_always" },
      { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
      { optionId: "reject_once", name: "Reject", kind: "reject_once" },
      { optionId: "allow_always", name: "Always allow", kind: "allow_always" },
    ],
  };
  const choices = permissionChoices(request);
  assert.deepEqual(choices.map((c) => c.kind), ["allow_once", "allow_always", "reject_once", "reject_always"]);
  assert.equal(choices[1].detail, undefined); // an older daemon sends no always patterns
  const scoped = permissionChoices({
    ...request,
    always: ["/srv/data/*"],
    alwaysRefused: [{ pattern: "/home/me/*", reason: "it would allow everything in the home folder (/home/me)" }],
  });
  assert.equal(
    scoped[1].detail,
    "remembers: /srv/data/*; counts as once for /home/me/*: it would allow everything in the home folder (/home/me)",
  );
  assert.deepEqual(scoped.map((c) => c.detail !== undefined), [false, true, false, false]);
  assert.deepEqual(permissionReply(choices[0], "ignored"), { optionId: "allow_once" });
  assert.deepEqual(permissionReply(choices[3], " not here "), { optionId: "reject_always", feedback: "not here" });
  assert.deepEqual(permissionReply(choices[2], ""), { optionId: "reject_once" });
  assert.deepEqual(permissionReply(undefined), { cancelled: true });
});

test("a move's review names where the file goes, a deletion's says it deletes", () => {
  const move: ReviewEditParams = { ...params("m"), uri: "file:///ws/a%20b.py", newUri: "file:///ws/pkg/shapes.py" };
  assert.equal(reviewTitle(move), "lspilot: a b.py → shapes.py (proposed move)");
  assert.equal(proposedName(move), "shapes.py"); // the proposed side has the new name (and its language)
  const deletion: ReviewEditParams = { ...params("d"), isDeletion: true, newText: "", hunks: [] };
  assert.equal(reviewTitle(deletion), "lspilot: x.py (proposed deletion)");
  assert.equal(reviewTitle(params("p")), "lspilot: x.py (proposed)");
  assert.equal(queuedNote(1, move), "1 more review queued (next: a b.py → shapes.py)");
  assert.equal(queuedNote(2, deletion), "2 more reviews queued (next: x.py (deletion))");
});

test("opening a review no longer pending leaves the one under review open", async () => {
  const queue = new ReviewQueue();
  const gone = queue.enqueue(params("gone"));
  void queue.enqueue(params("open"));
  queue.rejectAll("gone");
  await gone;
  assert.deepEqual(queue.toOpen("gone"), { message: "that review is over (no longer pending)" });
  assert.ok(queue.reviewing, "the review keys and buttons stay");
  const open = queue.toOpen();
  assert.ok("proposal" in open && open.proposal.id === "open");
  queue.rejectAll("open");
  assert.equal(queue.reviewing, false);
  assert.deepEqual(queue.toOpen(), { message: "nothing to review" });
});

test("opening a queued review makes it the one under review; the displaced one comes next", async () => {
  const queue = new ReviewQueue();
  const shown: (string | undefined)[] = [];
  queue.onDidChangeCurrent((p) => shown.push(p?.id));
  const first = queue.enqueue(params("p1"));
  const second = queue.enqueue(params("p2"));
  void queue.enqueue(params("p3"));
  const opened = queue.toOpen("p3");
  assert.ok("proposal" in opened && opened.proposal.id === "p3");
  assert.equal(queue.current?.id, "p3", "its diff gets the lenses and the title buttons");
  assert.deepEqual(shown, ["p1", "p3"]);
  assert.deepEqual(queue.toOpen("p3"), { proposal: queue.current }); // already current: nothing fires
  assert.deepEqual(shown, ["p1", "p3"]);
  queue.acceptAll("p3");
  assert.deepEqual(shown, ["p1", "p3", "p1"], "back to the one it displaced");
  queue.rejectAll("p1");
  assert.deepEqual(await first, { decision: "reject" });
  assert.equal(queue.current?.id, "p2");
  queue.acceptAll("p2");
  assert.deepEqual(await second, { decision: "accept" });
});

test("chat redraws are coalesced: the first at once, the rest at most once per interval", () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    let draws = 0;
    const render = coalesce(() => (draws += 1), 50);
    render();
    assert.equal(draws, 1);
    for (let i = 0; i < 100; i++) render(); // a stream of deltas
    assert.equal(draws, 1);
    mock.timers.tick(50);
    assert.equal(draws, 2, "what came meanwhile is drawn once");
    mock.timers.tick(50);
    assert.equal(draws, 2, "nothing new: no draw");
    render();
    assert.equal(draws, 3, "quiet for an interval: drawn at once");
  } finally {
    mock.timers.reset();
  }
});
