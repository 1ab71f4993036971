"""Identities and access rules, below the operation layer: the users file and the NACM engine.

`users` loads ``--users FILE`` (names, password hashes, groups, the agent names
each user may send as, SSH keys); `nacm` decides RFC 8341 access. Neither
imports anything above ``errors``/``yang``: the operation layer builds its
`Principal` from an `Identity` and asks `nacm.Nacm` through its authorizer.
"""
