"""Reads of an agent's data: the one read path every face's ``<get>``, ``<get-config>`` or task query takes.

`DataReads` is the read half of `an_agent.runtime.operations.Operations`:
what a principal may see (config, task state, the profile and templates,
the directory) built only as far as the request's scope selects, RFC 6243
defaults applied, then pruned by the `Authorizer`'s read view. Apart from
the writes and RPCs because it decides nothing and changes nothing; the
data version for a face's reply memo lives here too, beside what it covers.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

from lxml import etree

from an_agent.errors import RpcError
from an_agent.model import AN_AGENT_DIRECTORY_NS, IRTF_AGENT_NS, Task
from an_agent.runtime.admission import TASK_ID_TAG, TASK_TAG, TASKS_TAG
from an_agent.runtime.commits import ConfigOperations
from an_agent.runtime.datastore import Datastore
from an_agent.runtime.directory import DirectoryOperations
from an_agent.runtime.edit import elements
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import ReadScope
from an_agent.runtime.schemas import SchemaService
from an_agent.runtime.served import SessionsAndEvents
from an_agent.runtime.tasks import TaskEngine
from an_agent.yang.context import WithDefaults, YangContext


class DataReads(SessionsAndEvents):
    """The reads of `Operations`. Subclasses set the attributes in their ``__init__``."""

    yang: YangContext
    datastore: Datastore
    tasks: TaskEngine
    config: ConfigOperations
    schemas: SchemaService | None
    directory: DirectoryOperations | None
    _profile_xml: etree._Element

    def read(
        self,
        principal: Principal,
        scope: ReadScope | None = None,
        config_only: bool = False,
        extra: Iterable[etree._Element] = (),
        datastore: str = "running",
        with_defaults: WithDefaults = "explicit",
    ) -> list[etree._Element]:
        """The data tree ``principal`` may read, as top-level elements (private copies).

        Config and state (the profile, task status and results, schema
        templates) unless ``config_only``. Only what ``scope`` can select is
        built. ``extra`` are a face's own state trees (e.g. NETCONF
        monitoring) that go through the same read view. ``datastore``
        ``candidate`` reads the candidate (config only). ``with_defaults``:
        the RFC 6243 mode, applied to the agent's data (not to ``extra``)
        before the read view, so NACM judges default nodes as any other.
        """
        scope = scope or ReadScope()
        if datastore == "candidate":
            candidate = [e for e in elements(self.config.candidate.snapshot()) if scope.wants(e)]
            both = [*self._defaults(candidate, with_defaults, True), *(e for e in extra if scope.wants(e))]
            return self.authorizer.read_view(principal, both)
        top: list[etree._Element] = []
        if not config_only and scope.wants(self._profile_xml):
            agent = copy.deepcopy(self._profile_xml)
            if self.schemas is not None and scope.templates:
                # Personal patches only to their client (the reader or an agent it speaks for) or an admin.
                agent.append(self.schemas.templates_state(principal.may_read_client))
            top.append(agent)
        top.extend(self.datastore.top_level(scope.wants, scope.task_keys))
        if not config_only and self.directory is not None and scope.wants_name(AN_AGENT_DIRECTORY_NS, "directory"):
            top.append(self.directory.registry.state())
        if not config_only:
            for element in top:
                if element.tag == TASKS_TAG:
                    for entry in element.iterchildren(TASK_TAG):
                        entry.extend(self.tasks.state_elements(entry.findtext(TASK_ID_TAG) or ""))
        # The face's own trees are complete as built: schema defaults added to them would claim values
        # the agent does not keep (e.g. RFC 6022 statistics counters of 0).
        top = self._defaults(top, with_defaults, config_only)
        top.extend(e for e in extra if scope.wants(e))
        return self.authorizer.read_view(principal, top)

    def read_data(
        self,
        principal: Principal,
        scope: ReadScope,
        config_only: bool,
        extra: Iterable[etree._Element],
        datastore: str,
        with_defaults: WithDefaults,
    ) -> list[etree._Element]:
        """RFC 8526 ``<get-data>``: `read`, authorized as ``exec`` of ``ietf-netconf-nmda:get-data`` first."""
        self._exec(principal, "ietf-netconf-nmda:get-data")
        return self.read(principal, scope, config_only, extra, datastore=datastore, with_defaults=with_defaults)

    def _defaults(self, top: list[etree._Element], mode: WithDefaults, config_only: bool) -> list[etree._Element]:
        if mode == "explicit" or not top:
            return top
        xml = "".join(etree.tostring(e, encoding="unicode") for e in top)
        holder = etree.fromstring(f"<r>{self.yang.with_defaults(xml, mode, config_only)}</r>")
        return list(elements(holder))

    def data_version(self) -> tuple[int, int, int, int, int]:
        """A value that changes whenever what `read` returns may change (for a face's reply memo).

        Covers config commits (the datastore), task state (status and result,
        ``config false``, which change without a commit) and the schema
        templates, the directory's registrations and the candidate. Each part
        is bumped after its change is visible, so a reply built after reading version v holds data at least as new as v.
        The profile and the face's own extra trees do not change while the
        agent runs.
        """
        schemas = self.schemas.version if self.schemas is not None else -1
        directory = self.directory.registry.version if self.directory is not None else -1
        return (self.datastore.version, self.tasks.version, schemas, directory, self.config.candidate.version)

    def keys_of(self, element: etree._Element) -> tuple[str, ...]:
        """List key names when ``element`` is a list entry of the data tree, else () (for filters)."""
        return self.datastore.keys_of(element)

    def get_task(self, principal: Principal, task_id: str) -> Task:
        """taskResultQuery: the task with its status and result; `RpcError` data-missing when unknown."""
        scope = ReadScope(frozenset({(IRTF_AGENT_NS, "tasks")}), frozenset({task_id}), False)
        for element in self.read(principal, scope):
            for entry in element.iterchildren(TASK_TAG):
                return Task.from_xml(entry)
        raise RpcError.data_missing(f"there is no task {task_id}", f"/irtf-agent:tasks/task[task-id='{task_id}']")
