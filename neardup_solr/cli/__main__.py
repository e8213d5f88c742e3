import sys

from neardup_solr.cli import main

sys.exit(main())
