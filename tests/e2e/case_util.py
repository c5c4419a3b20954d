"""What the Python case drivers of tests/e2e share: failing or skipping with
the case's name (exit status 1 or 77, as CTest reads them), and an
environment without the caller's preload and PIPESPIN_* settings.

A driver sets `case_util.case` to the case it runs before it checks anything.
"""
import os
import sys

case = "?"


def fail(msg):
    print(f"FAIL ({case}): {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def skip(msg):
    print(f"SKIP ({case}): {msg}")
    sys.exit(77)


def clean_env(**kw):
    """os.environ without PIPESPIN_* and LD_PRELOAD, then kw (as strings)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("PIPESPIN_") and k != "LD_PRELOAD"}
    e.update({k: str(v) for k, v in kw.items()})
    return e
