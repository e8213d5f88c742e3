"""The file to give ``spark-submit``: ``spark-submit [options] .../neardup_solr/cli/spark_submit.py dedup FILE ...``
runs ``neardup-solr spark dedup FILE ...`` as the submitted application, on the cluster ``spark-submit``
names (``--master spark://``, ``yarn``, ``k8s://``). Its path: ``python -m neardup_solr.cli.spark_submit --path``."""

from __future__ import annotations

import sys
from neardup_solr.cli import main as cli


def main(argv: list[str]) -> int:
    if argv == ["--path"]:
        print(__file__)
        return 0

    return cli(["spark", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
