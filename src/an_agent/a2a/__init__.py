"""The A2A v1 face: agent card, state mapping and (in `an_agent.a2a.sdk`) the a2a-sdk adapter.

Only `an_agent.a2a.sdk` imports the ``a2a`` SDK; the card and the state table are plain data so that
they can be built and tested without it.
"""
