/** The chat transcript of turns against a real `lspilot serve` (real litellm, the scripted model). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatState, DETAIL_LINES, Transcript, type Entry } from "../src/core/chat";
import type { Update } from "../src/core/protocol";
import { ReviewQueue } from "../src/core/review";
import { setUp } from "./harness";

const TIMEOUT = { timeout: 150_000 };
const refuse = { pick: async () => undefined, feedback: async () => undefined };

test("a turn that ends with an error shows the error once", TIMEOUT, async () => {
  const t = await setUp({}, [{ error: 401 }]);
  try {
    const state = new ChatState();
    t.daemon.client.attach({ review: new ReviewQueue(), permissions: refuse, onUpdate: (u: Update) => state.update(u) });
    const result = await state.ask(t.daemon.client, { prompt: "hello" });
    assert.equal(result.stopReason, "error");
    const entries = state.transcript.entries;
    const error = entries.find((e) => e.type === "status");
    assert.ok(error?.type === "status" && /^error: .*API key/.test(error.text), JSON.stringify(entries));
    // The status line said why as it happened; the end line says only that the turn ended so.
    assert.deepEqual(entries.at(-1), { type: "end", stopReason: "error" });
    assert.equal(entries.filter((e) => JSON.stringify(e).includes("API key")).length, 1, JSON.stringify(entries));
  } finally {
    await t.close();
  }
});

test("the chat shows why a tool call failed and what a change did, a long diff cut short", TIMEOUT, async () => {
  const old = Array.from({ length: 60 }, (_, i) => `x${i} = ${i}\n`).join("");
  const t = await setUp({ "a.py": old }, [
    { tool_calls: [["read", { filePath: "missing.py" }]] },
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["write", { filePath: "a.py", content: old.replaceAll(" = ", " = 1 + ") }]] },
    { text: "done" },
  ]);
  try {
    const state = new ChatState();
    const queue = new ReviewQueue();
    queue.onDidChangeCurrent((proposal) => proposal && queueMicrotask(() => queue.acceptAll(proposal.id)));
    t.daemon.client.attach({ review: queue, permissions: refuse, onUpdate: (u: Update) => state.update(u) });
    const result = await state.ask(t.daemon.client, { prompt: "change a.py" });
    assert.equal(result.stopReason, "end");
    const tools = state.transcript.entries.flatMap((e) => (e.type === "tool" ? [e] : []));
    assert.deepEqual(tools.map((e) => [e.tool, e.status]), [["read", "error"], ["read", "completed"], ["write", "completed"]]);
    const [failed, read, write] = tools;
    assert.match(failed?.detail ?? "", /^Error: .*missing\.py/);
    assert.equal(read?.detail, undefined, "a read's output is the model's: not shown");
    const lines = (write?.detail ?? "").split("\n");
    assert.equal(lines.length, DETAIL_LINES + 1, write?.detail);
    assert.deepEqual(lines.slice(0, 4), ["--- a/a.py", "+++ b/a.py", "@@ -1,60 +1,60 @@", "-x0 = 0"]);
    assert.match(lines.at(-1) ?? "", /^… \d+ more lines$/);
    // A session redrawn from its history shows the same.
    const redraw = new Transcript();
    redraw.load(await t.daemon.client.history(result.sessionId));
    const details = (entries: Entry[]) => entries.flatMap((e) => (e.type === "tool" ? [e.detail] : []));
    assert.deepEqual(details(redraw.entries), details(state.transcript.entries));
  } finally {
    await t.close();
  }
});
