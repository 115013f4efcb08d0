"""``python -m prime_rl_dynamo.cli``."""

import sys

from prime_rl_dynamo.cli import main

sys.exit(main())
