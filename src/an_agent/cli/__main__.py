"""``python -m an_agent.cli`` is the ``an-agent`` command."""

from an_agent.cli import console_main

console_main()
