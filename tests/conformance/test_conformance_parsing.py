"""What the kit reads from a hello and from module texts, without a server."""

from __future__ import annotations

from an_agent.conformance.netconf_side import _INCLUDE, module_capabilities


def test_module_capabilities_are_parsed_and_malformed_ones_named() -> None:
    modules, problems = module_capabilities(
        [
            "urn:ietf:params:netconf:base:1.1",
            "urn:ietf:params:xml:ns:yang:irtf-agent?module=irtf-agent&revision=2025-06-01&features=a,b",
            "urn:x:bad?module=bad&revision=June-2025",
            "urn:x:nameless?revision=2025-06-01&module=",
        ]
    )
    assert [(m.name, m.revision, m.features) for m in modules] == [
        ("irtf-agent", "2025-06-01", ("a", "b")),
        ("bad", "June-2025", ()),
    ]
    assert modules[0].namespace == "urn:ietf:params:xml:ns:yang:irtf-agent"
    assert problems == [
        "urn:x:bad?module=bad&revision=June-2025: revision 'June-2025' is not YYYY-MM-DD",
        "urn:x:nameless?revision=2025-06-01&module=: no module name",
    ]


def test_include_statements_are_found_and_description_lines_are_not() -> None:
    text = 'module m {\n  include m-sub;\n  include "m-other" {\n    revision-date 2020-01-01;\n  }\n'
    text += '  description\n    "Addresses\n     include link-layer addresses.";\n}\n'
    assert _INCLUDE.findall(text) == ["m-sub", "m-other"]
