"""The A2A v1 face: agent card (`card`), state mapping (`states`), message reading (`inbound`), task
conversion (`convert`), the SDK request handler on the operation layer (`face`) and its HTTP server
(`server`).

Only `an_agent.a2a.face` imports the ``a2a`` SDK; the card, the state table and the conversions are
plain data so that they can be built and tested without it.
"""
