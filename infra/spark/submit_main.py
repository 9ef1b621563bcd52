"""The file `spark-submit` runs for `python -m infra.submit` (infra/submit.py): the `lakehouse`
command, imported from the project zip that comes with it as --py-files."""

import sys

from lakehouse.cli import main

sys.exit(main())
