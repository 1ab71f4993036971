"""An agent we did not write on a running lab's element managers: plain ncclient, nothing of ours imported.

The lab is started with the command line (``an-agent lab up --pace 30 --json``), as an operator would;
its addresses come from that JSON. The outside agent subscribes to the transport element manager, sees
the scenario's fibre cut arrive as an RFC 8632 ``alarm-notification`` in paced time, walks RFC 8345
``ietf-network-topology`` to the sites behind the cut link, restarts the link by RPC, and has yanglint
(libyang's CLI) validate what each element manager's ``<get>`` returns against the modules it downloaded
with ``<get-schema>``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lxml import etree
from ncclient import manager

pytestmark = [pytest.mark.interop, pytest.mark.slow]

AN_AGENT = str(Path(sys.executable).parent / "an-agent")
SHIPPED = Path(__file__).resolve().parents[2] / "topologies" / "cross-domain-fault.yaml"
AN = "urn:an-agent:params:xml:ns:yang:an-agent-network"
NS = {
    "al": "urn:ietf:params:xml:ns:yang:ietf-alarms",
    "an": AN,
    "nw": "urn:ietf:params:xml:ns:yang:ietf-network",
    "nt": "urn:ietf:params:xml:ns:yang:ietf-network-topology",
    "ncm": "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring",
}
PACE = 30.0


def lab_topology(tmp_path: Path) -> Path:
    """The shipped topology on free ports, with a users file naming the outside agent (``noc``, an operator)."""
    text = SHIPPED.read_text(encoding="utf-8")
    for port in [*range(18831, 18837), 18850, 18851]:
        text = text.replace(f"port: {port}", "port: 0")
    text = text.replace("a2a_port: 18843", "a2a_port: 0")
    users = tmp_path / "lab-users.yaml"
    users.write_text("users:\n  - {name: noc, password: noc-secret, groups: [operators]}\n", encoding="utf-8")
    users.chmod(0o600)
    path = tmp_path / "lab.yaml"
    path.write_text(text.replace("\nagents:\n", "\nusers_file: lab-users.yaml\n\nagents:\n", 1), encoding="utf-8")
    return path


def connect(device: dict[str, object], user: str = "noc", password: str = "noc-secret") -> manager.Manager:
    return manager.connect(
        host=str(device["host"]),
        port=int(str(device["port"])),
        username=user,
        password=password,
        hostkey_verify=False,
        look_for_keys=False,
        allow_agent=False,
        timeout=60,
    )


def yanglint_valid(session: manager.Manager, data: etree._Element, where: Path) -> subprocess.CompletedProcess[str]:
    """Download every module the element manager lists (RFC 6022) and validate ``data`` with yanglint."""
    where.mkdir()
    files = []
    for schema in data.iterfind(".//ncm:schemas/ncm:schema", NS):
        name, revision = schema.findtext("ncm:identifier", namespaces=NS), schema.findtext("ncm:version", namespaces=NS)
        reply = etree.fromstring(session.get_schema(name, revision).xml.encode())
        text = reply.findtext(".//ncm:data", namespaces=NS)
        assert text, name
        target = where / f"{name}@{revision}.yang"
        target.write_text(text, encoding="utf-8")
        if not name.startswith(("ietf-yang-types", "ietf-inet-types", "ietf-yang-metadata")):
            files.append(str(target))
    document = where / "get.xml"
    document.write_text("".join(etree.tostring(c, encoding="unicode") for c in data), encoding="utf-8")
    command = ["yanglint", "-t", "get", "-p", str(where), *files, str(document)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def test_an_outside_agent_watches_walks_and_restarts_through_the_element_managers(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    up = [AN_AGENT, "lab", "up", str(lab_topology(tmp_path)), "--run-dir", str(run_dir), "--in-process"]
    started = subprocess.run([*up, "--pace", str(PACE), "--json"], capture_output=True, text=True, timeout=180)
    assert started.returncode == 0, started.stderr
    up_at = time.monotonic()
    try:
        state = json.loads(started.stdout)
        assert state["pace"] == PACE
        devices = {d["name"]: d for d in state["devices"]}
        assert {(d["name"], d["domain"], d["host"]) for d in devices.values()} == {
            ("transport-em", "transport", "127.0.0.1"),
            ("ran-em", "ran", "127.0.0.1"),
        }
        with connect(devices["transport-em"]) as em:
            em.create_subscription()
            # the cut comes at 08:05 simulated: 5 minutes in, 10 wall seconds at 30 per second
            arrived = etree.fromstring(em.take_notification(timeout=120).notification_xml.encode())
            waited = time.monotonic() - up_at
            alarm = arrived.find(".//al:alarm-notification", NS)
            assert alarm is not None
            assert arrived.findtext("{*}eventTime", namespaces=NS).startswith("2025-06-01T08:05:00")
            assert alarm.findtext("al:perceived-severity", namespaces=NS) == "critical"
            assert 2 < waited < 120  # live, in paced time: lock-step would have cut it before we subscribed
            resource = alarm.findtext("al:resource", namespaces=NS) or ""
            link_id = resource.split("link-id='")[1].split("'")[0]
            assert link_id == "LINK-C2"

            data = etree.fromstring(em.get().data_xml.encode())
            link = data.find(f".//nw:network[nw:network-id='transport']/nt:link[nt:link-id='{link_id}']", NS)
            assert link is not None and link.findtext("an:evidence", namespaces=NS) == "loss-of-light"
            backhaul = data.find(".//nw:network[nw:network-id='backhaul']", NS)
            assert backhaul is not None
            behind = sorted(
                entry.findtext("nt:source/nt:source-node", namespaces=NS) or ""
                for entry in backhaul.iterfind("nt:link", NS)
                if any(
                    s.findtext("nt:link-ref", namespaces=NS) == link_id
                    for s in entry.iterfind("nt:supporting-link", NS)
                )
            )
            assert behind == [f"SITE-{n:02d}" for n in range(9, 31)]

            restart = f'<restart-element xmlns="{AN}"><element-id>{link_id}</element-id></restart-element>'
            reply = etree.fromstring(em.dispatch(etree.fromstring(restart)).xml.encode())
            assert reply.findtext(".//an:fault-cleared", namespaces=NS) == "false"  # a cut fibre needs a splice

            checked = yanglint_valid(em, data, tmp_path / "transport-modules")
            assert checked.returncode == 0, checked.stderr
        with connect(devices["ran-em"]) as ran:
            ran_data = etree.fromstring(ran.get().data_xml.encode())
            status = {
                s.findtext("an:site-id", namespaces=NS): s.findtext("an:oper-status", namespaces=NS)
                for s in ran_data.iterfind(".//an:sites/an:site", NS)
            }
            assert status["SITE-09"] == "down" and status["SITE-01"] == "up"
            checked = yanglint_valid(ran, ran_data, tmp_path / "ran-modules")
            assert checked.returncode == 0, checked.stderr
    finally:
        subprocess.run([AN_AGENT, "lab", "down", "--run-dir", str(run_dir)], capture_output=True, timeout=120)
