"""Prompt sections (draft figure 7), tolerant of '##x' and '## x'."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from an_agent.model import PromptSections, build_prompt, parse_prompt


def test_build_puts_each_marker_on_its_own_line() -> None:
    text = build_prompt("gNB-1\ngNB-2", "Diagnose the outage.", "alarms since 14:19")
    assert text.splitlines() == [
        "## target object",
        "gNB-1",
        "gNB-2",
        "## task description",
        "Diagnose the outage.",
        "## environmental information",
        "alarms since 14:19",
    ]


def test_parse_draft_figure_7_without_space() -> None:
    content = (
        '<content namespace="prompt">\n'
        "##target object\n<object>xxx</object>\n"
        "##task description\n<description>yyy</description>\n"
        "##environmental information\n<environmentInput>zzz</environmentInput>"
    )
    assert parse_prompt(content) == PromptSections(
        target_object="<object>xxx</object>",
        task_description="<description>yyy</description>",
        environment="<environmentInput>zzz</environmentInput>",
        preamble='<content namespace="prompt">',
    )


def test_parse_text_on_the_marker_line_case_and_multiline() -> None:
    sections = parse_prompt("## Target Object: gNB-7\n##  task   description restart it\nthen verify\n")
    assert sections.target_object == "gNB-7"
    assert sections.task_description == "restart it\nthen verify"
    assert sections.environment is None
    assert sections.preamble is None
    assert sections.complete


def test_parse_without_markers_is_all_preamble() -> None:
    sections = parse_prompt("just do it")
    assert sections == PromptSections(preamble="just do it")
    assert not sections.complete


def test_marker_must_start_a_line() -> None:
    # '##' inside a line is text, not a section.
    sections = parse_prompt("## task description use the ## task description marker")
    assert sections.task_description == "use the ## task description marker"


def test_empty_section_is_present_but_empty() -> None:
    sections = parse_prompt("##target object\n##task description\nx")
    assert sections.target_object == ""
    assert sections.task_description == "x"
    assert not sections.complete


_line = (
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="#"), min_size=1)
    .map(str.strip)
    .filter(bool)
)
_body = st.lists(_line, min_size=1, max_size=4).map("\n".join)


@given(_body, _body, st.none() | _body)
def test_build_then_parse_round_trips(target: str, description: str, environment: str | None) -> None:
    sections = parse_prompt(build_prompt(target, description, environment))
    assert sections == PromptSections(target, description, environment)
