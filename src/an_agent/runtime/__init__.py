"""The operation layer: the agent itself, protocol-neutral and typed (faces call `operations.Operations`).

principal.py, requests.py   who asks and what (typed requests and results)
operations.py               the facade: every agent operation
admission.py                the one pipeline of task changes (parse, authorize, validate, commit, schedule, notify)
access.py                   the authorization hook (default: permit all)
sessions.py                 per-session state: the running lock, subscriptions
datastore.py, edit.py       the running datastore (units, persistence) and RFC 6241 edit semantics
tasks.py, behaviour.py      task life cycle; the behaviour contract
schemas.py                  structured payloads and schema evolution for one agent
notifications.py, filters.py  the durable event log and subscriptions; subtree/xpath filters
"""
