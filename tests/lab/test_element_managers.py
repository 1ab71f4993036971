"""The lab's element managers (`an_agent.lab.em`): the simulator over NETCONF, read and acted on with ncclient.

Real parts: a `SimNetwork` on a `SimKernel`, each element manager a real SSH/NETCONF server on 127.0.0.1,
ncclient sessions, libyang (and yanglint, libyang's own CLI) checking what is served.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from lxml import etree
from ncclient import manager
from ncclient.operations import RPCError
from tests.lab.labsupport import TOPOLOGIES, variant

from an_agent.access.users import agent_users
from an_agent.errors import AnAgentError, ConfigError
from an_agent.lab.agent import lab_host_key
from an_agent.lab.devices import DeviceDomain, DeviceSpec
from an_agent.lab.em.manager import ElementManager
from an_agent.lab.em.southbound import NetconfNetwork
from an_agent.lab.kernel import SimKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.spec import FaultSpec, FaultType
from an_agent.lab.topology import load_topology
from an_agent.yang.context import MODULES_DIR, NETWORK_MODULES_DIR
from outsider import netconf

AN = "urn:an-agent:params:xml:ns:yang:an-agent-network"
AL = "urn:ietf:params:xml:ns:yang:ietf-alarms"
NW = "urn:ietf:params:xml:ns:yang:ietf-network"
NT = "urn:ietf:params:xml:ns:yang:ietf-network-topology"
NS = {"an": AN, "al": AL, "nw": NW, "nt": NT}


@dataclass
class Rig:
    kernel: SimKernel
    network: SimNetwork
    transport: ElementManager
    ran: ElementManager
    operator_password: str

    def connect(self, em: ElementManager, user: str = "admin", password: str = "admin") -> manager.Manager:
        return netconf(em.port, user=user, password=password)


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    topology = load_topology(TOPOLOGIES / "cross-domain-fault.yaml")
    kernel = SimKernel(topology.start_time)
    network = SimNetwork(topology.network, topology.seed, kernel.now, kernel.call_at)
    lab_host_key(tmp_path / "host_key")
    agent_db, logins = agent_users(["ip-fault"])
    users = tmp_path / "users.yaml"
    users.write_text("users:\n  - {name: viewer, password: look-only, groups: [viewers]}\n", encoding="utf-8")
    users.chmod(0o600)
    ems = [
        ElementManager(
            DeviceSpec(f"{domain}-em", DeviceDomain(domain), regions=("metro",)),
            network,
            kernel.call_at,
            kernel,
            state_dir=tmp_path / domain,
            host="127.0.0.1",
            port=0,
            host_key=tmp_path / "host_key",
            logins={"admin": "admin"},
            user_db=agent_db,
            users_file=users,
        ).start()
        for domain in ("transport", "ran")
    ]
    try:
        yield Rig(kernel, network, ems[0], ems[1], logins["ip-fault"])
    finally:
        for em in ems:
            em.stop()
        kernel.close()


def rpc(session: manager.Manager, xml: str) -> etree._Element:
    return etree.fromstring(session.dispatch(etree.fromstring(xml)).xml.encode())


def data_of(session: manager.Manager) -> etree._Element:
    return etree.fromstring(session.get().data_xml.encode())


def yanglint_get(data: etree._Element, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """yanglint (libyang's CLI, not our code) validates a <get> reply against the served modules."""
    document = tmp_path / "get.xml"
    document.write_text("".join(etree.tostring(c, encoding="unicode") for c in data), encoding="utf-8")
    modules = [*NETWORK_MODULES_DIR.glob("*.yang")] + [
        MODULES_DIR / f
        for f in (
            "ietf-netconf-monitoring@2010-10-04.yang",
            "ietf-netconf-acm@2018-02-14.yang",
            "nc-notifications@2008-07-14.yang",
            "notifications@2008-07-14.yang",
            "ietf-yang-library@2019-01-04.yang",  # RFC 8525: every server of ours serves its YANG library
            "ietf-datastores@2018-02-14.yang",
        )
    ]
    command = ["yanglint", "-t", "get", "-p", str(MODULES_DIR), "-p", str(NETWORK_MODULES_DIR)]
    return subprocess.run([*command, *map(str, modules), str(document)], capture_output=True, text=True, check=False)


def test_every_get_validates_with_yanglint_and_a_broken_one_does_not(rig: Rig, tmp_path: Path) -> None:
    rig.network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
    for em in (rig.transport, rig.ran):
        with rig.connect(em) as session:
            data = data_of(session)
        done = yanglint_get(data, tmp_path)
        assert done.returncode == 0, (em.device.name, done.stderr)
    # the check can fail: a link state the module does not have
    status = data.find(".//an:cell/an:oper-status", NS)
    assert status is not None
    status.text = "sideways"
    assert yanglint_get(data, tmp_path).returncode != 0


def test_alarm_notifications_live_and_replayed_and_the_alarm_list(rig: Rig) -> None:
    with rig.connect(rig.transport) as watcher:
        watcher.create_subscription()
        rig.network.inject(FaultSpec(FaultType.ROUTER_PORT_FAULT, "LINK-A3"))
        live = etree.fromstring(watcher.take_notification(timeout=10).notification_xml.encode())
    notification = live.find(".//al:alarm-notification", NS)
    assert notification is not None
    assert notification.findtext("al:resource", namespaces=NS) == (
        "/nw:networks/nw:network[nw:network-id='transport']/nt:link[nt:link-id='LINK-A3']"
    )
    assert notification.findtext("al:perceived-severity", namespaces=NS) == "critical"
    assert notification.findtext("al:alarm-type-id", namespaces=NS) == "annet:link-down"
    with rig.connect(rig.transport, "ip-fault", rig.operator_password) as session:
        reply = rpc(session, f'<restart-element xmlns="{AN}"><element-id>LINK-A3</element-id></restart-element>')
        assert reply.findtext(".//an:fault-cleared", namespaces=NS) == "true"
        alarm = data_of(session).find(".//al:alarm-list/al:alarm", NS)
    assert rig.network.link("LINK-A3").up
    assert alarm is not None and alarm.findtext("al:is-cleared", namespaces=NS) == "true"
    # a late subscriber replays both from the durable log (RFC 5277 startTime)
    with rig.connect(rig.transport) as late:
        late.create_subscription(start_time="2000-01-01T00:00:00Z")
        severities = []
        for _ in range(2):
            got = etree.fromstring(late.take_notification(timeout=10).notification_xml.encode())
            severities.append(got.findtext(".//al:perceived-severity", namespaces=NS))
    assert severities == ["critical", "cleared"]


def test_the_sites_behind_a_cut_link_are_found_by_walking_the_topology(rig: Rig) -> None:
    rig.network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
    with rig.connect(rig.transport, "viewer", "look-only") as session:
        data = data_of(session)
    link = data.find(".//nw:network[nw:network-id='transport']/nt:link[nt:link-id='LINK-C2']", NS)
    assert link is not None
    assert (link.findtext("an:oper-status", namespaces=NS), link.findtext("an:evidence", namespaces=NS)) == (
        "down",
        "loss-of-light",
    )
    backhaul = data.find(".//nw:network[nw:network-id='backhaul']", NS)
    assert backhaul is not None
    behind = sorted(
        link.findtext("nt:source/nt:source-node", namespaces=NS) or ""
        for link in backhaul.iterfind("nt:link", NS)
        if any(s.findtext("nt:link-ref", namespaces=NS) == "LINK-C2" for s in link.iterfind("nt:supporting-link", NS))
    )
    assert behind == rig.network.sites_behind("LINK-C2") and len(behind) == 22


def test_cells_change_within_their_limits_and_a_refused_edit_changes_nothing(rig: Rig) -> None:
    before = rig.network.cell("CELL-0101"), rig.network.cell("CELL-0201")
    with rig.connect(rig.ran, "ip-fault", rig.operator_password) as session:
        session.edit_config(
            target="running",
            config=f'<config><cells xmlns="{AN}"><cell><cell-id>CELL-0101</cell-id><tx-power>45</tx-power>'
            "<tilt>4</tilt><admin-state>locked</admin-state>"
            "<energy-saving><state>suspended</state></energy-saving></cell></cells></config>",
        )
        cell = rig.network.cell("CELL-0101")
        assert (cell.power_dbm, cell.tilt_deg, cell.locked, cell.energy_saving) == (45.0, 4.0, True, "suspended")
        shown = data_of(session).find(".//an:cell[an:cell-id='CELL-0101']", NS)
        assert shown is not None and shown.findtext("an:oper-status", namespaces=NS) == "down"
        # beyond the limit on the second cell: the whole edit is refused, naming the leaf
        with pytest.raises(RPCError) as refused:
            session.edit_config(
                target="running",
                config=f'<config><cells xmlns="{AN}"><cell><cell-id>CELL-0201</cell-id><tilt>5</tilt></cell>'
                "<cell><cell-id>CELL-0301</cell-id><tx-power>49</tx-power></cell></cells></config>",
            )
        assert refused.value.tag == "invalid-value"
        assert refused.value.path == "/an-agent-network:cells/cell[cell-id='CELL-0301']/tx-power"
        assert "above the cell's limit of 46 dBm" in refused.value.message
        assert rig.network.cell("CELL-0201") == before[1]
        with pytest.raises(RPCError) as unknown:
            session.edit_config(
                target="running",
                config=f'<config><cells xmlns="{AN}"><cell><cell-id>NOPE-C9</cell-id><tilt>5</tilt></cell>'
                "</cells></config>",
            )
        assert unknown.value.tag == "data-missing" and "there is no cell 'NOPE-C9'" in unknown.value.message
        assert unknown.value.path == "/an-agent-network:cells/cell[cell-id='NOPE-C9']"
        with pytest.raises(RPCError) as unknown_element:
            rpc(session, f'<restart-element xmlns="{AN}"><element-id>SITE-99</element-id></restart-element>')
        assert unknown_element.value.tag == "data-missing" and "SITE-99" in unknown_element.value.message
    changed, refusals = rig.network.radio_limits()
    assert changed == ["CELL-0101"] and any("CELL-0301" in r for r in refusals)


def test_an_operator_without_write_rights_is_refused_and_nothing_changes(rig: Rig) -> None:
    cell = rig.network.cell("CELL-0101")
    rig.network.inject(FaultSpec(FaultType.SITE_SOFTWARE_FAULT, "SITE-05"))
    with rig.connect(rig.ran, "viewer", "look-only") as session:
        assert data_of(session).find(".//an:cell", NS) is not None  # may read
        with pytest.raises(RPCError) as denied:
            session.edit_config(
                target="running",
                config=f'<config><cells xmlns="{AN}"><cell><cell-id>CELL-0101</cell-id><tx-power>44</tx-power>'
                "</cell></cells></config>",
            )
        assert denied.value.tag == "access-denied" and "viewer" in denied.value.message
        assert denied.value.path == "/an-agent-network:cells/cell[cell-id='CELL-0101']"
        with pytest.raises(RPCError) as not_told:  # denied before it could learn that a cell does not exist
            session.edit_config(
                target="running",
                config=f'<config><cells xmlns="{AN}"><cell><cell-id>NOPE-C9</cell-id><tilt>5</tilt></cell>'
                "</cells></config>",
            )
        assert not_told.value.tag == "access-denied"
        with pytest.raises(RPCError) as no_exec:
            rpc(session, f'<restart-element xmlns="{AN}"><element-id>SITE-05</element-id></restart-element>')
        assert no_exec.value.tag == "access-denied" and "an-agent-network:restart-element" in no_exec.value.message
        session.create_subscription()  # a member of a group may watch
    assert rig.network.cell("CELL-0101") == cell
    assert not rig.network.site("SITE-05").in_service
    with rig.connect(rig.ran, "ip-fault", rig.operator_password) as operator:  # an operator may act
        reply = rpc(operator, f'<restart-element xmlns="{AN}"><element-id>SITE-05</element-id></restart-element>')
    assert reply.findtext(".//an:fault-cleared", namespaces=NS) == "true" and rig.network.site("SITE-05").in_service


def test_an_energy_saving_window_closes_on_the_lab_clock(rig: Rig) -> None:
    cells = ("CELL-0101", "CELL-0102")
    with rig.connect(rig.ran, "ip-fault", rig.operator_password) as session:
        reply = rpc(
            session,
            f'<open-energy-saving-window xmlns="{AN}"><window-id>night</window-id>'
            + "".join(f"<cell-id>{c}</cell-id>" for c in cells)
            + "<state>reduced</state><saving-percent>10</saving-percent><duration>600</duration>"
            "</open-energy-saving-window>",
        )
        assert reply.findtext(".//an:end", namespaces=NS) == "2025-06-01T08:10:00.000000Z"
        assert {rig.network.cell(c).energy_saving for c in cells} == {"reduced"}
        assert rig.kernel.run(until=rig.kernel.now() + 3600) == "idle"  # the window's timer ran at +600 s
        assert {(rig.network.cell(c).energy_saving, rig.network.cell(c).saving_percent) for c in cells} == {
            ("enabled", 25.0)
        }
        window = data_of(session).find(".//an:window[an:window-id='night']", NS)
        assert window is not None and window.findtext("an:open", namespaces=NS) == "false"
        with pytest.raises(RPCError) as closed:
            rpc(
                session,
                f'<close-energy-saving-window xmlns="{AN}"><window-id>night</window-id></close-energy-saving-window>',
            )
        assert closed.value.tag == "data-missing"


def test_the_topology_names_what_is_wrong_with_a_device(tmp_path: Path) -> None:
    shipped = load_topology(TOPOLOGIES / "cross-domain-fault.yaml").devices
    assert [(d.name, d.domain, d.port, d.regions) for d in shipped] == [
        ("transport-em", "transport", 18850, ("metro",)),
        ("ran-em", "ran", 18851, ("metro",)),
    ]
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        (
            "{name: ran-em, domain: ran, port: 18851, regions: [metro]}",
            "{name: ip-fault, domain: ran, regions: [moon]}",
        ),
    )
    with pytest.raises(ConfigError) as bad:
        load_topology(path)
    assert "devices[1].name: name 'ip-fault' is already used" in str(bad.value)
    assert "devices[1].regions[0]: unknown region 'moon'" in str(bad.value)


def test_southbound_netconf_answers_what_the_simulator_answers_over_netconf_only(rig: Rig) -> None:
    rig.network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
    rig.network.inject(FaultSpec(FaultType.ROUTER_PORT_FAULT, "LINK-A1"))
    where = ("127.0.0.1", rig.transport.port)
    adapter = NetconfNetwork(rig.network, lambda: where, ("ip-fault", rig.operator_password), "transport-em")
    try:
        assert adapter.active_alarms(["metro"], "ip_transport") == rig.network.active_alarms(["metro"], "ip_transport")
        assert adapter.links(["metro"]) == rig.network.links(["metro"])
        assert adapter.link("LINK-C2") == rig.network.link("LINK-C2")
        assert adapter.sites_behind("LINK-A1") == rig.network.sites_behind("LINK-A1")
        assert adapter.site("SITE-09").backhaul == rig.network.site("SITE-09").backhaul
        assert adapter.reset_port("LINK-A1", "ip-fault") is True and rig.network.link("LINK-A1").up
        assert adapter.reset_port("LINK-C2", "ip-fault") is False
        assert [c.by for c in rig.network.changes() if c.action == "port_reset"] == ["ip-fault", "ip-fault"]
        with pytest.raises(ValueError, match="no link 'LINK-X'"):
            adapter.link("LINK-X")
        adapter.close()
        rig.transport.stop()  # what it answers, it reads over NETCONF: without its element manager it cannot
        with pytest.raises(AnAgentError):
            adapter.links()
    finally:
        adapter.close()


def test_southbound_netconf_needs_an_ip_fault_agent_and_a_transport_element_manager(tmp_path: Path) -> None:
    ran = "{name: ran-fault, role: ran-fault, port: 18832,"
    transport = "  - {name: transport-em, domain: transport, port: 18850, regions: [metro]}\n"
    path = variant(tmp_path, "cross-domain-fault.yaml", (ran, f"{ran} southbound: netconf,"))
    with pytest.raises(ConfigError, match=r"agents\[1\]\.southbound: southbound: netconf is for ip-fault agents"):
        load_topology(path)
    ip = "{name: ip-fault, role: ip-fault, port: 18833,"
    path = variant(tmp_path, "cross-domain-fault.yaml", (ip, f"{ip} southbound: netconf,"), (transport, ""))
    with pytest.raises(ConfigError, match="needs a devices: entry of domain transport managing the agent's regions"):
        load_topology(path)
