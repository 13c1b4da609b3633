/** The chat transcript of turns against a real `lspilot serve` (real litellm, the scripted model). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatState } from "../src/core/chat";
import type { Update } from "../src/core/protocol";
import { ReviewQueue } from "../src/core/review";
import { setUp } from "./harness";

const TIMEOUT = { timeout: 150_000 };

test("a turn that ends with an error shows the error once", TIMEOUT, async () => {
  const t = await setUp({}, [{ error: 401 }]);
  try {
    const state = new ChatState();
    const refuse = { pick: async () => undefined, feedback: async () => undefined };
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
