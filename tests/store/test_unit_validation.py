"""An edit of one unit is validated with only what the YANG says it can affect or need.

Every refusal must be the one the whole-datastore validation gives (same
error-tag, error-path and message), and a list whose constraints reach its
siblings or are reached from outside must be validated whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from an_agent.errors import RpcError
from an_agent.model import IRTF_AGENT_NS, ContextEntry, DataParam, DataType, Task
from an_agent.runtime.datastore import Datastore
from an_agent.runtime.edit import SchemaPath, YangSchema
from an_agent.store.agent_store import AgentStore
from an_agent.yang.context import YangContext
from an_agent.yang.reach import UnitReach

IRTF = IRTF_AGENT_NS
RX = "urn:an-agent:test:reach-example"
EXAMPLE_MODULES = Path(__file__).parent / "reach_modules"


class WholeSchema(YangSchema):
    """The same schema with the unit analysis switched off: every edit validated whole (the reference)."""

    def unit_reach(self, path: SchemaPath) -> UnitReach | None:
        return None


class Spy(YangSchema):
    """Records the documents libyang is given."""

    def __init__(self, yang: YangContext) -> None:
        super().__init__(yang)
        self.documents: list[str] = []

    def validate_config(self, xml: str) -> None:
        self.documents.append(xml)
        super().validate_config(xml)


@pytest.fixture(scope="module")
def yang() -> YangContext:
    return YangContext.default()


@pytest.fixture(scope="module")
def example() -> YangContext:
    return YangContext(EXAMPLE_MODULES)


def config(*children: etree._Element) -> etree._Element:
    out = etree.Element("config")
    out.extend(children)
    return out


def tasks(*entries: etree._Element) -> etree._Element:
    container = etree.Element(f"{{{IRTF}}}tasks")
    container.extend(entries)
    return container


def task(task_id: str, **fields: str) -> etree._Element:
    element = Task(task_id, content="## task description\nx").to_xml()
    for name, value in fields.items():
        etree.SubElement(element, f"{{{IRTF}}}{name.replace('_', '-')}").text = value
    return element


def seeded(tmp_path: Path, schema: YangSchema) -> Iterator[Datastore]:
    """A datastore with 20 tasks, two data-params and a context record, some tasks naming them."""
    store = AgentStore(tmp_path)
    try:
        datastore = Datastore(schema, store)
        params = [DataParam(f"p{i}", DataType.TEXT, data=f"text {i}").to_xml() for i in range(2)]
        record = ContextEntry("c1", "alice", "agent", "x", 0.0).to_xml()
        entries = [task(f"t{i}") for i in range(20)]
        etree.SubElement(entries[0], f"{{{IRTF}}}msg-data").text = "p0"
        etree.SubElement(entries[1], f"{{{IRTF}}}context").text = "c1"
        with datastore.edit(config(*params, record, tasks(*entries))) as pending:
            pending.commit()
        yield datastore
    finally:
        store.close()


def outcome(datastore: Datastore, edit: etree._Element) -> tuple[str, str | None, str] | None:
    """None when the edit commits, else the refusal's (error-tag, error-path, message)."""
    try:
        with datastore.edit(edit) as pending:
            pending.commit()
    except RpcError as exc:
        return (exc.error_tag, exc.path, exc.message)
    return None


BAD_EDITS = {
    "leafref to a missing data-param": lambda: config(tasks(task("new", msg_data="nope"))),
    "leafref to a missing context record": lambda: config(tasks(task("new", context="nope"))),
    "a value of the wrong type": lambda: config(tasks(task("new", task_async="maybe"))),
    "an unknown element": lambda: config(tasks(task("new", no_such_leaf="x"))),
    "a content that breaks its pattern": lambda: config(tasks(Task("new", content="no markers").to_xml())),
    "a duplicate key (create)": lambda: config(
        etree.fromstring(
            f'<tasks xmlns="{IRTF}"><task xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="create">'
            "<task-id>t3</task-id></task></tasks>"
        )
    ),
    "a context record naming a missing data-param": lambda: config(
        etree.fromstring(
            f'<context xmlns="{IRTF}"><id>c2</id><request-info><dataParam>nope</dataParam></request-info></context>'
        )
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_EDITS))
def test_a_unit_edit_is_refused_exactly_as_the_whole_validation_refuses_it(
    tmp_path: Path, yang: YangContext, name: str
) -> None:
    results = []
    for label, schema in (("unit", YangSchema(yang)), ("whole", WholeSchema(yang))):
        for datastore in seeded(tmp_path / label, schema):
            results.append(outcome(datastore, BAD_EDITS[name]()))
    assert results[0] is not None, f"{name}: accepted"
    assert results[0] == results[1]


def test_a_new_task_is_validated_with_the_entries_it_names_and_nothing_else(tmp_path: Path, yang: YangContext) -> None:
    spy = Spy(yang)
    for datastore in seeded(tmp_path, spy):
        spy.documents.clear()
        assert outcome(datastore, config(tasks(task("new", msg_data="p1", context="c1")))) is None
        (document,) = spy.documents
        assert "<task-id>new</task-id>" in document
        assert "<id>p1</id>" in document and "<id>c1</id>" in document  # named: needed by the leafrefs
        assert "<id>p0</id>" not in document and "<task-id>t5</task-id>" not in document  # unrelated units


def test_removing_a_named_unit_is_validated_whole_and_refused(tmp_path: Path, yang: YangContext) -> None:
    remove = etree.fromstring(
        f'<data-params xmlns="{IRTF}" xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0" nc:operation="delete">'
        "<id>p0</id></data-params>"
    )
    results = []
    for label, schema in (("unit", YangSchema(yang)), ("whole", WholeSchema(yang))):
        for datastore in seeded(tmp_path / label, schema):
            results.append(outcome(datastore, config(remove)))
    assert results[0] is not None and results[0] == results[1]
    assert results[0][0] == "data-missing"


def test_the_shipped_schema_lets_tasks_be_judged_alone(yang: YangContext) -> None:
    reach = yang.unit_reach(((IRTF, "tasks"), (IRTF, "task")))
    assert reach is not None and not reach.referenced
    assert {t.target_list for t in reach.targets} == {((IRTF, "data-params"),), ((IRTF, "context"),)}
    params = yang.unit_reach(((IRTF, "data-params"),))
    assert params is not None and params.referenced  # tasks name them: removing one is checked whole


@pytest.mark.parametrize(
    "path",
    [
        ((RX, "items"), (RX, "item")),  # unique across entries
        ((RX, "guarded"),),  # a must with an absolute path
        ((RX, "watched"),),  # a must elsewhere counts its entries
        ((RX, "pointed"),),  # a leafref elsewhere names a leaf that is not its key
        ((RX, "escaping"),),  # a must that climbs out of the entry
        ((RX, "bounded"),),  # max-elements
    ],
)
def test_a_list_whose_constraints_cross_entries_is_validated_whole(example: YangContext, path: SchemaPath) -> None:
    assert example.unit_reach(path) is None


def test_a_self_contained_list_is_judged_alone(example: YangContext) -> None:
    reach = example.unit_reach(((RX, "free"),))
    assert reach is not None and reach.referenced
    assert [t.target_list for t in reach.targets] == [((RX, "free"),)]


def rx(xml: str) -> etree._Element:
    return config(*etree.fromstring(f'<config xmlns="{RX}">{xml}</config>'))


CROSS_EDITS = {
    "unique across entries": (
        "<items><item><name>a</name><port>1</port></item></items>",
        "<items><item><name>b</name><port>1</port></item></items>",
    ),
    "a must elsewhere counting the list": (
        "<policy><max-watched>1</max-watched></policy><watched><id>a</id></watched>",
        "<watched><id>b</id></watched>",
    ),
    "max-elements": ("<bounded><id>a</id></bounded><bounded><id>b</id></bounded>", "<bounded><id>c</id></bounded>"),
    "a must in the entry over other lists": (
        "<pointed><id>a</id></pointed><pointed><id>b</id></pointed><pointed><id>c</id></pointed>",
        "<guarded><id>g</id></guarded>",
    ),
    "a relative must in the entry": ("<free><id>a</id></free>", "<free><id>b</id><low>5</low><high>1</high></free>"),
    "a leafref to a missing sibling": ("<free><id>a</id></free>", "<free><id>b</id><ref>zz</ref></free>"),
}


@pytest.mark.parametrize("name", sorted(CROSS_EDITS))
def test_constraints_across_entries_still_refuse(tmp_path: Path, example: YangContext, name: str) -> None:
    seed, edit = CROSS_EDITS[name]
    results = []
    for label, schema in (("unit", YangSchema(example)), ("whole", WholeSchema(example))):
        store = AgentStore(tmp_path / label)
        try:
            datastore = Datastore(schema, store)
            assert outcome(datastore, rx(seed)) is None
            results.append(outcome(datastore, rx(edit)))
        finally:
            store.close()
    assert results[0] is not None, f"{name}: accepted"
    assert results[0] == results[1]


def test_a_self_contained_entry_naming_a_sibling_is_accepted(tmp_path: Path, example: YangContext) -> None:
    spy = Spy(example)
    store = AgentStore(tmp_path)
    try:
        datastore = Datastore(spy, store)
        assert outcome(datastore, rx("<free><id>a</id></free><free><id>b</id></free>")) is None
        spy.documents.clear()
        assert outcome(datastore, rx("<free><id>c</id><ref>a</ref></free>")) is None
        (document,) = spy.documents
        assert "<id>a</id>" in document and "<id>b</id>" not in document
    finally:
        store.close()
