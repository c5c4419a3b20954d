#!/usr/bin/env python3
"""Validates a command's JSON document against its schema in docs/.

    validate_json.py SCHEMA FILE    SCHEMA: a file name in docs/ (ab.schema.json);
                                    FILE: one JSON document (its last line, when
                                    the command's own output comes first)

python3-jsonschema (Debian's package, tools/deps.sh) is a real implementation
of the standard: the schemas users' tools read are the ones the tests hold
the commands to.
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:  # a missing dependency is a failure, not a skip
    sys.exit("validate_json.py: python3-jsonschema is missing (tools/deps.sh installs it)")

docs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")
schema_name, path = sys.argv[1], sys.argv[2]
with open(os.path.join(docs, schema_name)) as f:
    schema = json.load(f)
jsonschema.Draft202012Validator.check_schema(schema)
with open(path) as f:
    text = f.read().strip().splitlines()
if not text:
    sys.exit(f"{path}: empty")
doc = json.loads(text[-1])
errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc),
                key=lambda e: list(e.absolute_path))
for e in errors[:5]:
    where = "/".join(str(p) for p in e.absolute_path) or "(top)"
    print(f"{path}: {schema_name}: {where}: {e.message}", file=sys.stderr)
sys.exit(1 if errors else 0)
