/**
 * Reviews of whole files against a real `lspilot serve`: changes with no hunk to decide (an
 * empty new file, a move that changes no line), decided with the whole-file actions.
 */
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { ChatState } from "../src/core/chat";
import type { Update } from "../src/core/protocol";
import { ReviewQueue } from "../src/core/review";
import { setUp } from "./harness";

const TIMEOUT = { timeout: 150_000 };

test("accepting a change without hunks (an empty new file, a move of unchanged lines) applies it", TIMEOUT, async () => {
  const move = ["*** Begin Patch", "*** Update File: a.py", "*** Move to: b.py", "*** End Patch"].join("\n");
  const t = await setUp({ "a.py": "x = 1\n" }, [
    { tool_calls: [["write", { filePath: "pkg/__init__.py", content: "" }]] },
    { tool_calls: [["read", { filePath: "a.py" }]] },
    { tool_calls: [["apply_patch", { patchText: move }]] },
    { text: "done" },
  ]);
  try {
    const queue = new ReviewQueue();
    const state = new ChatState();
    const hunks: number[] = [];
    t.daemon.client.attach({ review: queue, permissions: { pick: async () => undefined, feedback: async () => undefined }, onUpdate: (u: Update) => state.update(u) });
    queue.onDidChangeCurrent((proposal) => {
      if (!proposal) return;
      hunks.push(proposal.hunks.length);
      queueMicrotask(() => queue.acceptAll(proposal.id)); // "Accept the whole file": no hunk has a lens
    });
    assert.equal((await state.ask(t.daemon.client, { prompt: "add a package, rename a.py" })).stopReason, "end");
    assert.deepEqual(hunks, [0, 0]);
    assert.equal(readFileSync(path.join(t.ws, "pkg", "__init__.py"), "utf8"), "");
    assert.ok(!existsSync(path.join(t.ws, "a.py")), "a.py was moved");
    assert.equal(readFileSync(path.join(t.ws, "b.py"), "utf8"), "x = 1\n");
  } finally {
    await t.close();
  }
});
