"""`python -m services.cli`: the `trainledger` command."""

import sys

from services.cli import main

sys.exit(main())
