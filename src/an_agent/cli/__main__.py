"""``python -m an_agent.cli`` is the ``an-agent`` command."""

import sys

from an_agent.cli import main

sys.exit(main())
