"""`python -m pipeline.cli`: the `lakehouse` command."""

import sys

from pipeline.cli import main

sys.exit(main())
