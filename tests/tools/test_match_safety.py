"""The cascade never edits a place it is not sure of, nor lines the model left alone: ties it
refuses, the file's own text for unchanged lines, newString nesting deeper than oldString,
escapes, word boundaries, and differences that cannot be seen."""

from __future__ import annotations

import pytest

from tools._block_merge import Unplaced, onto_block

from .test_match import Case, check

#: Two methods with the same first and last line sharing two of four middle lines.
SAVES = (
    "class Cache:\n"
    "    def save(self, key, value):\n"
    "        self.check(key)\n"
    "        data = encode(value)\n"
    "        self.items[key] = data\n"
    "        self.count += 1\n"
    "        return True\n"
    "\n\n"
    "class Store:\n"
    "    def save(self, key, value):\n"
    "        self.check(key)\n"
    "        blob = serialize(value)\n"
    '        self.log.debug("saving %s", key)\n'
    "        self.rows[key] = blob\n"
    "        self.count += 1\n"
    "        return True\n"
)
#: Store.save copied without its log line: as long as Cache.save, and two middle lines as its.
SLOPPY_STORE = (
    "    def save(self, key, value):\n"
    "        self.check(key)\n"
    "        blob = serialize(value)\n"
    "        self.rows[key] = blob\n"
    "        self.count += 1\n"
    "        return True"
)
#: Two blocks between the same anchors, one 83% like oldString's middle and one 76%.
TWINS = (
    "def load(db, query):\n    rows = fetch(db, q)\n    rows = tidy(rows)\n    return rows\n\n"
    "def load(db, query):\n    rows = fetch_all(db)\n    rows = clean(rows, deep=True)\n    return rows\n"
)

#: A test whose last line is repeated right after it.
TICKS = (
    "def test_counter():\n    counter = Counter()\n    counter.add(1)\n    counter.add(2)\n"
    "    counter.tick()\n    counter.tick()\n    assert counter.total == 3\n"
)
#: A loop with an if inside: two "}" lines, one per depth.
RENDER = (
    "function render(items) {\n  for (const item of items) {\n    if (item) {\n"
    "      list.push(format(item));\n    }\n  }\n  return list.length;\n}\n"
)
#: RENDER's first seven lines with the if's "}" misremembered as "});".
RENDER_OLD = (
    "function render(items) {\n  for (const item of items) {\n    if (item) {\n"
    "      list.push(format(item));\n    });\n  }\n  return list.length;"
)

CASES = [
    Case(
        # It edited g's deeper line: 5 spaces of its 8, then "x = 1".
        "an exact oldString starting inside a deeper line's indentation is not taken for it",
        "def f():\n    x = 1\n\ndef g():\n    if y:\n        x = 1\n",
        "     x = 1",
        "     x = 2",
        None,
        error="oldString is exactly in line 6, but there only from inside a deeper line's indentation, "
        "and whole lines match it at line 2",
    ),
    Case(
        # context-aware took lines 1-6 (as long as oldString) and deleted the second tick.
        "oldString with a line too many does not reach a next line equal to its last",
        TICKS,
        "def test_counter():\n    counter = Counter()\n    counter.add(1)\n    counter.add(2)\n\n"
        "    counter.tick()",
        "def test_counter():\n    counter = Counter()\n    counter.add(5)",
        None,
        error="oldString is about as similar to 2 places (context-aware): lines 1-5, 1-6",
    ),
    Case(
        # The final line break paired with oldString's blank line and went: "return Nonetail()".
        "a block's final line break stays when oldString has a blank line too many",
        "def fetch(buf):\n    value = encode(buf)\n    node = emit(value)\n    return flush(value)\ntail()\n",
        "def fetch(buf):\n    value = encode(buf)\n\n    node = emit(value)\n    return flush(value)\n",
        "def fetch(buf):\n    return None\n",
        "block-anchored",
        "def fetch(buf):\n    return None\ntail()\n",
    ),
    Case(
        # The outer "}" of oldString paired with the if's, and count++ went inside the if.
        "a line added after a misremembered line goes where that line is",
        RENDER,
        RENDER_OLD,
        RENDER_OLD.replace("    });\n", "    });\n    count++;\n"),
        "context-aware",
        RENDER.replace("    }\n  }\n", "    }\n    count++;\n  }\n"),
    ),
    Case(
        # It edited Cache.save: same length, and two of its four middle lines are oldString's.
        "a sloppy copy of one of two similar blocks is refused, naming both",
        SAVES,
        SLOPPY_STORE,
        SLOPPY_STORE.replace("self.rows[key] = blob", "self.rows[key] = blob.compress()"),
        None,
        error="oldString is about as similar to 2 places (context-aware): lines 2-7, 11-17, so which one",
    ),
    Case(
        # It took the first: 83% similar, the other 76% (under 80, so not counted as a match).
        "a second block just under the similarity threshold makes the first no match",
        TWINS,
        "def load(db, query):\n    rows = fetch(db, query)\n    rows = clean(rows)\n    return rows",
        "def load(db, query):\n    return None",
        None,
        error="about as similar to 2 places (block-anchored): lines 1-4, 6-9, so which one",
    ),
    Case(
        # It replaced lines 1-5, up to the early "return False", leaving the function's last two.
        "a shortened copy of a function is not cut at an early line equal to its last",
        "def check(item):\n    validate(item)\n    normalize(item)\n    if item.skip:\n        return False\n"
        "    store(item)\n    return False\n\n\nother()\n",
        "def check(item):\n    validate(item)\n    normalize(item)\n    store(item)\n    return False",
        "def check(item):\n    validate(item)\n    store(item)\n    return True",
        None,
        error="about as similar to 2 places (context-aware): lines 1-5, 1-7, so which one",
    ),
    Case(
        # One unchanged middle line of two passed for "half of the middle unchanged".
        "one identical middle line is no context",
        "def build(cfg):\n    load(cfg)\n    check(cfg)\n    return cfg\n",
        "def build(cfg):\n    load(cfg)\n    wipe(everything, now=True)\n    return cfg",
        "def build(cfg):\n    return cfg",
        None,
        error="oldString was not found",
    ),
    Case(
        # The file's line became the model's copy: "x = offset  # ms".
        "an unchanged line keeps the file's text, not the model's copy of it",
        "def f(offset_ms):\n    x = offset_ms  # ms\n    y = 2\n    z = 3\n    return x + y + z\n",
        "def f(offset_ms):\n    x = offset  # ms\n    y = 2\n    z = 3\n    return x + y + z",
        "def f(offset_ms):\n    x = offset  # ms\n    y = 20\n    z = 3\n    return x + y + z",
        "context-aware",
        "def f(offset_ms):\n    x = offset_ms  # ms\n    y = 20\n    z = 3\n    return x + y + z\n",
    ),
    Case(
        # Paired by position, the kept "result = ..." line became the file's "audit.record(user)".
        "an unchanged line takes the text of the same file line, not of the one at its place",
        "def handle(request):\n    user = authenticate(request)\n    data = parse_body(request)\n"
        "    audit.record(user)\n    result = process(user, data)\n    return result\n",
        "def handle(request):\n    user = authenticate(request)\n    data = parse_body(request)\n"
        "    result = process(user, data)\n    metrics.bump()\n    return result",
        "def handle(request):\n    user = authenticate(request)\n"
        "    data = parse_body(request, strict=True)\n    result = process(user, data)\n    return result",
        "context-aware",
        # and audit.record, which the model's copy lacks, stays (the block replaced whole lost it)
        "def handle(request):\n    user = authenticate(request)\n"
        "    data = parse_body(request, strict=True)\n    audit.record(user)\n"
        "    result = process(user, data)\n"
        "    return result\n",
    ),
    Case(
        # Replaced whole by newString, the block lost the audit and fraud lines the copy lacked.
        "lines the model's copy lacks stay when it changes a line beside them (block-anchored)",
        "def process_order(order, inventory, payments):\n    validate_order_fields(order)\n"
        "    reserve_inventory_items(inventory, order.items)\n    audit_log.record('reserved', order.id)\n"
        "    charge_customer_payment(payments, order.customer, order.total)\n"
        "    verify_fraud_score(order, threshold=0.8)\n"
        "    send_confirmation_email(order.customer, order.id)\n"
        "    update_order_status(order, 'confirmed')\n    return order\n",
        "def process_order(order, inventory, payments):\n    validate_order_fields(order)\n"
        "    reserve_inventory_items(inventory, order.items)\n"
        "    charge_customer_payment(payments, order.customer, order.total)\n"
        "    send_confirmation_email(order.customer, order.id)\n"
        "    update_order_status(order, 'confirmed')\n    return order",
        "def process_order(order, inventory, payments):\n    validate_order_fields(order)\n"
        "    reserve_inventory_items(inventory, order.items)\n"
        "    charge_customer_payment(payments, order.customer, order.total)\n"
        "    send_confirmation_email(order.customer, order.id)\n"
        "    update_order_status(order, 'done')\n    return order",
        "block-anchored",
        "def process_order(order, inventory, payments):\n    validate_order_fields(order)\n"
        "    reserve_inventory_items(inventory, order.items)\n    audit_log.record('reserved', order.id)\n"
        "    charge_customer_payment(payments, order.customer, order.total)\n"
        "    verify_fraud_score(order, threshold=0.8)\n"
        "    send_confirmation_email(order.customer, order.id)\n"
        "    update_order_status(order, 'done')\n    return order\n",
    ),
    Case(
        # The model's two misremembered lines, which newString keeps, replaced the file's real ones.
        "lines the model misremembers and keeps stay as the file has them (context-aware)",
        "def configure(app):\n    app.name = 'svc'\n    app.timeout = compute_timeout(app.env, retries=5)\n"
        "    app.debug = False\n    app.cache = build_cache(app.env)\n    app.port = 8080\n    return app\n",
        "def configure(app):\n    app.name = 'svc'\n    app.workers = 4\n    app.debug = False\n"
        "    app.log_level = 'info'\n    app.port = 8080\n    return app",
        "def configure(app):\n    app.name = 'svc'\n    app.workers = 4\n    app.debug = False\n"
        "    app.log_level = 'info'\n    app.port = 9090\n    return app",
        "context-aware",
        "def configure(app):\n    app.name = 'svc'\n    app.timeout = compute_timeout(app.env, retries=5)\n"
        "    app.debug = False\n    app.cache = build_cache(app.env)\n    app.port = 9090\n    return app\n",
    ),
    Case(
        "an unchanged line keeps the file's inner whitespace",
        "total = a  +  b\nprint(total)\n",
        "total = a + b\nprint(total)",
        "total = a + b\nprint(total, flush=True)",
        "whitespace-normalized",
        "total = a  +  b\nprint(total, flush=True)\n",
    ),
    Case(
        "an unchanged line keeps the file's trailing spaces",
        "x = 1   \ny = 2\n",
        "x = 1\ny = 2",
        "x = 1\ny = 3",
        "indentation-flexible",
        "x = 1   \ny = 3\n",
    ),
    Case(
        "an unchanged blank line keeps the file's (no model's trailing spaces)",
        "x = 1\n\ny = 2\n",
        "x = 1  \n  \ny = 2  ",
        "x = 1  \n  \ny = 3",
        "indentation-flexible",
        "x = 1\n\ny = 3\n",
    ),
    Case(
        # Read in the 4-space default unit, the 16-space line went one tab too deep.
        "newString nesting deeper than oldString, 8-space model in a tab file",
        "def f():\n\tgo()\n\tstop()\n",
        "        go()\n        stop()",
        "        go()\n        if x:\n                stop()",
        "indentation-flexible",
        "def f():\n\tgo()\n\tif x:\n\t\tstop()\n",
    ),
    Case(
        # 6 spaces (two levels of 2) collapsed onto 4 (one level).
        "newString nesting two levels deeper, 2-space model in a tab file",
        "def f():\n\tgo()\n\tstop()\n",
        "  go()\n  stop()",
        "  go()\n  if x:\n    if y:\n      stop()",
        "indentation-flexible",
        "def f():\n\tgo()\n\tif x:\n\t\tif y:\n\t\t\tstop()\n",
    ),
    Case(
        # Unescaped, oldString is the real tab at line 4; as written it is lines 2-3.
        "escape-normalized and whitespace matchers finding different places is refused",
        'def f():\n    if x:\n        msg = "a\\tb"\nif x:\n    msg = "a\tb"\n',
        'if x:\n    msg = "a\\tb"',
        'if x:\n    msg = "a\\tc"',
        None,
        error="about as similar to 2 places (escape-normalized, whitespace-normalized): lines 2-3, 4-5",
    ),
    Case(
        # A Makefile recipe: "\t" was written literally into the file.
        "a multi-line escape match unescapes newString too",
        "all:\n\techo hi\n\nclean:\n\trm -f out\n",
        "all:\n\\techo hi",
        "all:\n\\techo bye",
        "escape-normalized",
        "all:\n\techo bye\n\nclean:\n\trm -f out\n",
    ),
    Case(
        # The file's "\n" (two characters) in newString became a line break inside the string.
        "a backslash sequence the file has as written stays as written in newString",
        'print("hi\\n")\nx = 1\n',
        'print(\\"hi\\\\n\\")',
        'print(\\"bye\\n\\")',
        "escape-normalized",
        'print("bye\\n")\nx = 1\n',
    ),
    Case(
        # It replaced "count = 1" inside "account = 1".
        "blank-line-trimmed text never starts inside a word",
        "account = 1\nx = 2\n",
        "count = 1\n\n",
        "count = 2\n",
        None,
        error="oldString was not found",
    ),
    Case(
        "blank-line-trimmed text never ends inside a word",
        "y = 1\nx = counter\n",
        "\n\nx = count",
        "x = total",
        None,
        error="oldString was not found",
    ),
    Case(
        # "cafe" + a combining acute (a decomposed "café") became "teá".
        "blank-line-trimmed text never ends before a combining mark",
        "cafe\u0301 = 1\n",
        "  cafe",
        "  tea",
        None,
        error="oldString was not found",
    ),
    Case(
        "blank-line-trimmed text never ends inside a Devanagari word",
        "\u0928\u092e\u0938\u094d\u0924\u0947 = 1\n",
        "  \u0928\u092e\u0938",
        "  hello",
        None,
        error="oldString was not found",
    ),
    Case(
        "differing only in Unicode normalization is said",
        "caf\u00e9 = 1\nx = 2\n",
        "cafe\u0301 = 1",
        "cafe\u0301 = 2",
        None,
        error="oldString differs from the file only in Unicode normalization",
    ),
    Case(
        "a byte-order mark in oldString is said",
        "import os\nx = 2\n",
        "\ufeffimport os",
        "import sys",
        None,
        error="oldString contains a byte-order mark (U+FEFF)",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_safety(case: Case) -> None:
    check(case)


def test_changes_that_cannot_be_placed_on_the_file_s_lines_are_refused() -> None:
    """Two changed lines apart, with no line between them that is in the file as the model
    wrote it: which file lines each stands for cannot be told."""
    old, new = "A\nX\nB\nY\nC", "A\nX2\nB\nY2\nC"
    with pytest.raises(Unplaced):
        onto_block(new, old, new, "A\nsomething else\nand other\nlines entirely\nC")
    assert onto_block(new, old, new, "A\nX\nkept\nB\nY\nC") == "A\nX2\nkept\nB\nY2\nC"
    # a line added between two lines the file has otherwise: after which of P, Q is not known
    with pytest.raises(Unplaced):
        onto_block("A\nX\nNEW\nY\nC", "A\nX\nY\nC", "A\nX\nNEW\nY\nC", "A\nP\nQ\nC")
