"""The end-to-end suites' named checks, by what they read: ids, pods, the agent's /metrics, the
cluster's nodes and API, DRA's slices and claims, the UltraServer operator's objects.

Each check is a function of plain inputs (text, parsed JSON, file paths) that returns nothing
and raises CheckFailed with the reason, or returns what a shell needs to print. e2e_checks.py
runs one by name from a shell; the *_test.py files beside them are their own tests (CTest:
e2e_checks), so a suite's check can fail only for what it names.
"""


class CheckFailed(Exception):
    """A check saw something other than what it wants; the message says what."""


def require(condition, message):
    if not condition:
        raise CheckFailed(message)
