#!/usr/bin/env python3
"""The baseline of the quiet-run benchmark: what a relay written the
obvious way in Python costs when nothing is due. It does what wsrelay does
in such a run, no more: reads its state (a JSON file, here wsrelay's own),
decides from the budget ledger that no alert call is due, and saves the
state again. Standard library only; it never calls the platform.

Usage: naive_relay.py STATE_IN STATE_OUT NOW
"""

import json
import os
import sys

SPAN = 3600       # the alert operation's window
LIMIT = 12        # calls per window and login ID
SPACING = 327     # seconds between routine calls (11 an hour)


def due(login, now):
    calls = [t for t in login.get("alert", {}).get("calls", []) if t > now - SPAN]
    return len(calls) < LIMIT and (not calls or now - max(calls) >= SPACING)


def main():
    src, dst, now = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(src, encoding="utf-8") as f:
        state = json.load(f)
    n_due = sum(1 for login in state.get("logins", {}).values() if due(login, now))
    tmp = dst + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, dst)
    return 0 if n_due == 0 else 3


if __name__ == "__main__":
    sys.exit(main())
