"""Transport diagnosis and repair through an element manager over NETCONF (ncclient only; nothing of an-agent).

The element manager serves RFC 8632 ietf-alarms and RFC 8345 ietf-network / ietf-network-topology with
an-agent-network's link state (docs/element-managers.md of an-agent). `diagnose` finds, among the links
the affected sites' backhaul rides on (and links named in the request), those that are down, picks the
one that explains most of the sites, and says why it is down; `repair` restarts links (resets their
router ports). Both answer with plain dicts, the finding an IP/transport fault agent gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lxml import etree
from ncclient import manager

AN = "urn:an-agent:params:xml:ns:yang:an-agent-network"
NS = {
    "an": AN,
    "nw": "urn:ietf:params:xml:ns:yang:ietf-network",
    "nt": "urn:ietf:params:xml:ns:yang:ietf-network-topology",
}
CAUSES = {
    "loss-of-light": ("link_cut", "fibre cut: loss of light on both router ports", False,
                      "dispatch field maintenance to splice the fibre"),
    "port-error-disabled": ("router_port_fault", "router port error-disabled (link flapping protection)", True,
                            "reset the router ports remotely"),
}  # fmt: skip


def read_login(path: str) -> tuple[str, str]:
    user, _, password = Path(path).read_text(encoding="utf-8").strip().partition(":")
    return user, password


def connect(address: str, login: tuple[str, str]) -> Any:
    host, _, port = address.rpartition(":")
    return manager.connect(
        host=host, port=int(port), username=login[0], password=login[1],
        hostkey_verify=False, look_for_keys=False, allow_agent=False, timeout=30,
    )  # fmt: skip


def _network(em: Any) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """The transport links (id -> a, b, up, evidence) and each site's backhaul (site -> links, nearest first)."""
    data = etree.fromstring(em.get(filter=("subtree", f'<networks xmlns="{NS["nw"]}"/>')).data_xml.encode())
    links: dict[str, dict[str, Any]] = {}
    backhaul: dict[str, list[str]] = {}
    for network in data.iterfind(".//nw:network", NS):
        kind = network.findtext("nw:network-id", namespaces=NS)
        for link in network.iterfind("nt:link", NS):
            if kind == "transport":
                links[link.findtext("nt:link-id", namespaces=NS) or ""] = {
                    "a": link.findtext("nt:source/nt:source-node", namespaces=NS),
                    "b": link.findtext("nt:destination/nt:dest-node", namespaces=NS),
                    "up": link.findtext("an:oper-status", namespaces=NS) == "up",
                    "evidence": link.findtext("an:evidence", namespaces=NS),
                }
            elif kind == "backhaul":
                site = link.findtext("nt:source/nt:source-node", namespaces=NS) or ""
                backhaul[site] = [s.findtext("nt:link-ref", namespaces=NS) or ""
                                  for s in link.iterfind("nt:supporting-link", NS)]  # fmt: skip
    return links, backhaul


def diagnose(em: Any, payload: dict[str, Any], by: str) -> tuple[str, dict[str, Any]]:
    """``(summary, finding)`` for a fault_diagnosis_v1 payload."""
    links, backhaul = _network(em)
    sites = sorted(payload.get("affected_site_ids") or [])
    text = " ".join([str(payload.get("suspected_root_cause") or ""), *map(str, _as_list(payload.get("other")))])
    named = {word.strip(",.;()") for word in text.split()} & set(links)
    candidates = {link for site in sites for link in backhaul.get(site, [])} | named
    down = sorted(link for link in candidates if link in links and not links[link]["up"])

    def behind(link: str) -> list[str]:
        served = {site for site, rides in backhaul.items() if link in rides}
        return sorted(served & set(sites)) if sites else sorted(served)

    if not down:
        root = f"backhaul of {len(sites)} site(s) healthy: every link up ({', '.join(sorted(candidates))})"
        return root, finding("none", None, root, False, ["look for the cause on the radio side"], [], by)
    down.sort(key=lambda link: (-len(behind(link)), link))
    link = down[0]
    fault_type, cause, remote, advice = CAUSES.get(links[link]["evidence"] or "",
                                                   ("unknown", "link down", False, "dispatch field maintenance"))
    root = f"{link} ({links[link]['a']} - {links[link]['b']}) down: {cause}"
    if len(down) > 1:
        root += "; also down: " + ", ".join(down[1:])
    return root, finding(fault_type, link, root, remote, [advice], behind(link), by)


def repair(em: Any, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Restart the links of the request that are down; ``(summary, result)``; ValueError when none came up."""
    links, backhaul = _network(em)
    sites = payload.get("affected_site_ids") or []
    wanted = {link for site in sites for link in backhaul.get(site, [])}
    wanted |= {w.strip(",.;()") for w in str(payload.get("suspected_root_cause") or "").split()} & set(links)
    repaired = []
    for link in sorted(link for link in wanted if link in links and not links[link]["up"]):
        reply = em.dispatch(etree.fromstring(
            f'<restart-element xmlns="{AN}"><element-id>{link}</element-id></restart-element>'))  # fmt: skip
        if etree.fromstring(reply.xml.encode()).findtext(".//an:fault-cleared", namespaces=NS) == "true":
            repaired.append(link)
    if not repaired:
        raise ValueError("restarting the links of the request did not bring any up: field maintenance needed")
    return f"{', '.join(repaired)} back up after a restart", {"repaired_link_ids": repaired}


def finding(fault_type: str, element: str | None, root: str, remote: bool, advice: list[str], sites: list[str],
            by: str) -> dict[str, Any]:  # fmt: skip
    return {
        "root_cause": root, "fault_type": fault_type, "element": element, "remote_repair_possible": remote,
        "recommendations": advice, "explained_site_ids": sites, "explained_cell_ids": [], "diagnosed_by": by,
    }  # fmt: skip


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [] if value is None else [value]
