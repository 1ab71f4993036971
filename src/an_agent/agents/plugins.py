"""Finding an outsider's behaviour class: ``PACKAGE.MODULE:CLASS``, or a name in the entry-point group.

Used by ``an-agent serve --behaviour`` and a topology agent's ``behaviour:``; every way it can go wrong
is a `ConfigError` that says what was looked for and what was found instead (a missing module, an
import that failed inside the plugin, a missing class, a class that is not a behaviour).
"""

from __future__ import annotations

import importlib
import re
import traceback
from importlib import metadata

from an_agent.agents.sdk import ENTRY_POINT_GROUP, Behaviour
from an_agent.errors import ConfigError

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def load_behaviour_class(ref: str) -> type[Behaviour]:
    """The `Behaviour` subclass ``ref`` names: ``package.module:Class``, or an entry-point name.

    Raises `ConfigError` with a message a person can act on when it cannot be loaded.
    """
    if ":" not in ref:
        return _from_entry_point(ref)
    if not _REF.match(ref):
        raise ConfigError(f"behaviour {ref!r}: expected PACKAGE.MODULE:CLASS (e.g. acme_agents.capacity:CapacityAgent)")
    module_name, _, attribute = ref.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise ConfigError(
                f"behaviour {ref!r}: no module {exc.name!r} is installed (pip install the package that "
                "provides it, in the environment an-agent runs in)"
            ) from None
        raise ConfigError(f"behaviour {ref!r}: importing {module_name} failed: {exc}") from None
    except Exception as exc:  # the plugin's own code failed while being imported: say where
        where = traceback.extract_tb(exc.__traceback__)[-1]
        raise ConfigError(
            f"behaviour {ref!r}: importing {module_name} failed: {type(exc).__name__}: {exc} "
            f"({where.filename}:{where.lineno})"
        ) from None
    target: object = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"behaviour {ref!r}: module {module_name} has no {attribute!r}")
        target = getattr(target, part)
    return _checked(ref, target)


def _from_entry_point(name: str) -> type[Behaviour]:
    if not _NAME.match(name):
        raise ConfigError(f"behaviour {name!r}: expected PACKAGE.MODULE:CLASS or an {ENTRY_POINT_GROUP} name")
    found = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not found:
        known = sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})
        raise ConfigError(
            f"behaviour {name!r}: no installed package declares it in the {ENTRY_POINT_GROUP} entry points "
            f"(declared: {', '.join(known) or 'none'})"
        )
    return load_behaviour_class(found[0].value)


def _checked(ref: str, target: object) -> type[Behaviour]:
    if not isinstance(target, type) or not issubclass(target, Behaviour):
        raise ConfigError(
            f"behaviour {ref!r} is {type(target).__name__ if not isinstance(target, type) else 'a class'} "
            "that does not subclass an_agent.agents.sdk.Behaviour (or LabBehaviour)"
        )
    if getattr(target, "__abstractmethods__", None):
        missing = ", ".join(sorted(target.__abstractmethods__))
        raise ConfigError(f"behaviour {ref!r} is abstract: it does not implement {missing}")
    return target
