"""The Python interpreter of one docs page (tests/docs_runner.py): reads blocks as JSON lines on standard input,
runs each in one namespace, in the working directory and environment it was started with, and answers each with
a JSON line: what the block printed, and the traceback when it raised.

A page's Python runs in a process of its own, as a reader's would: in the test process it met what other tests
had left there (a Spark driver JVM keeps the working directory it was started in, and a stopped SparkSession
keeps its JVM), so a page's relative paths could resolve against the checkout.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback


def main() -> None:
    answers = sys.stdout
    namespace: dict = {"__name__": "__main__"}
    for line in sys.stdin:
        block = json.loads(line)
        printed = io.StringIO()
        error = None
        try:
            with contextlib.redirect_stdout(printed):
                exec(compile(block["code"], block["where"], "exec"), namespace)
        except BaseException as exc:  # noqa: BLE001 - the page's failure, whatever it is, goes back to the test
            error = "".join(traceback.format_exception(exc))
        answers.write(json.dumps({"printed": printed.getvalue(), "error": error}) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
