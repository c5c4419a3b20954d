#!/usr/bin/env python3
"""Validates statistics lines against docs/stats.schema.json.

    validate_stats.py FILE...     every line of every FILE (exit 1 at the first bad one)

As a module: `validate(obj)` raises ValueError naming the first problem.
The validator is python3-jsonschema (Debian's package, tools/deps.sh): a
real implementation of the standard, so that the schema the operators' tools
read is the one the tests hold the shim to; a home-made subset could skip a
keyword it does not know and pass anything.
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:  # a missing dependency is a failure, not a skip
    sys.exit("validate_stats.py: python3-jsonschema is missing (tools/deps.sh installs it)")

SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                           "stats.schema.json")
with open(SCHEMA_PATH) as f:
    SCHEMA = json.load(f)
jsonschema.Draft202012Validator.check_schema(SCHEMA)
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def validate(obj):
    errors = sorted(VALIDATOR.iter_errors(obj), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "(top)"
        raise ValueError(f"{where}: {e.message}")


def validate_file(path):
    n = 0
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                validate(json.loads(raw))
            except (ValueError, json.JSONDecodeError) as e:
                raise ValueError(f"{path}:{lineno}: {e}") from None
            n += 1
    return n


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    try:
        total = sum(validate_file(p) for p in sys.argv[1:])
    except ValueError as e:
        sys.exit(f"validate_stats.py: {e}")
    print(f"{total} lines valid against docs/stats.schema.json")
