"""The acceptance table of a `pipespin-bench matrix` Markdown report, for the
CLI tests (cli_test.sh): each check's row, by the check's name."""


def acceptance_rows(path):
    """{check: [value, interval, threshold, bound, result]} of the rows whose
    first cell names a case (`case`: ...)."""
    rows = {}
    for line in open(path):
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            rows[cells[0]] = cells[1:]
    return rows
