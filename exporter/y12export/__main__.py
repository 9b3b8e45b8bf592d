"""`python3 -m y12export`: the exporter's command line (y12export.cli)."""
import sys

from y12export.cli import main

sys.exit(main())
