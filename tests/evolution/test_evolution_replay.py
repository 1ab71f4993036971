"""The replay tool on the labelled corpora with the real model and the shipped defaults (done-when of issue 3).

The product never sees the ``label`` field; only these tests read it to judge the outcome.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from an_agent.evolution.cohesion import core_of
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.replay import parse_lines, replay
from an_agent.schemas.values import parse_constraints
from conftest import DATA, FakeEmbedder

PATCH_FIELDS = [
    "patch_id",
    "parent_schema_id",
    "cluster_id",
    "client_id",
    "timestamp",
    "expiration",
    "state",
    "new_keys",
    "modified_keys",
]
KEY_FIELDS = ["key_name", "key_type", "required", "default_value", "semantic_description", "experimental"]
CLUSTER_FIELDS = [
    "cluster_id",
    "schema_id",
    "size",
    "distinct_clients",
    "heat",
    "cohesion",
    "core_share",
    "state",
    "members",
    "member_lines",
]
_RUNS: dict[str, tuple[dict[str, Any], list[str], list[dict[str, Any]]]] = {}


def run(corpus: str, embedder: Any) -> tuple[dict[str, Any], list[str], list[dict[str, Any]]]:
    """The replay of a corpus (with the real model, once per test session: the tests only read it)."""
    if isinstance(embedder, MiniLMEmbedder) and corpus in _RUNS:
        return _RUNS[corpus]
    lines = (DATA / corpus).read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    report = replay(lines, embedder).to_dict()
    out = report, [r["label"] for r in rows], rows
    if isinstance(embedder, MiniLMEmbedder):
        _RUNS[corpus] = out
    return out


def majority(labels: list[str], members: list[int]) -> str:
    return Counter(labels[m] for m in members).most_common(1)[0][0]


def check_corpus(
    report: dict[str, Any], labels: list[str], rows: list[dict[str, Any]], missed: frozenset[str] = frozenset()
) -> dict[str, dict[str, Any]]:
    """One patch per intent that should trigger (but ``missed``), none from noise or weak intents.

    Returns the patch per label.
    """
    assert report["fragments"] == len(rows)
    members = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    assert sorted(m for ms in members.values() for m in ms) == list(range(len(rows)))
    by_label: dict[str, dict[str, Any]] = {}
    for patch in report["patches"]:
        label = majority(labels, members[patch["cluster_id"]])
        assert label.startswith(("cluster:", "conflict:")), f"patch {patch['patch_id']} from {label}"
        assert label not in by_label, f"two patches for {label}"
        by_label[label] = patch
    expected = {lab for lab in labels if lab.startswith(("cluster:", "conflict:"))}
    assert set(by_label) == expected - missed
    for label, patch in by_label.items():
        assert list(patch) == PATCH_FIELDS and patch["state"] == "active"
        clients = {rows[m]["client_id"] for m in members[patch["cluster_id"]] if labels[m] == label}
        if label.startswith("cluster:personal"):
            assert patch["client_id"] == next(iter(clients)), label
        else:
            assert patch["client_id"] is None, label
        for key in patch["new_keys"] + patch["modified_keys"]:
            assert list(key) == KEY_FIELDS
    return by_label


@pytest.mark.slow
def test_dev_corpus_gives_one_sensible_patch_per_intent(minilm: MiniLMEmbedder) -> None:
    report, labels, rows = run("dev_other_corpus.jsonl", minilm)
    by_label = check_corpus(report, labels, rows)
    words = {
        "cluster:roaming_partner": {"roaming", "roamers", "partner", "inbound"},
        "cluster:high_temperature": {"temperature", "thermal", "hot", "heat", "overheating"},
        "cluster:iot_sensitivity": {"iot", "sensors", "meters", "smart", "devices"},
        "cluster:maintenance_window": {"maintenance", "window"},
        "cluster:personal_sms": {"sms", "text", "message"},
        # Named after what is asked (a rollback), not after its condition ("if KPIs drop").
        "cluster:rollback_plan": {"rollback", "roll", "back", "fallback", "revert", "undo", "restore"},
    }
    # A name is a noun phrase, never subject + verb ("sensors_rely", "throughput_falls", "users_roaming");
    # "roaming" ends a noun phrase after an adjective ("inbound_roaming"), a clause after its subject.
    clause_ends = {"rely", "falls", "goes", "increase", "rises", "run", "hit", "affected", "drop"}
    subjects = {"users", "visitors", "subscribers", "roamers", "customers", "devices"}
    for label, patch in by_label.items():
        (key,) = patch["new_keys"]
        assert key["experimental"] is True and key["required"] is False
        # Named from the meaning: at least two words, never a single frequent token.
        assert len(key["key_name"].split("_")) >= 2, (label, key["key_name"])
        assert key["key_name"].split("_")[-1] not in clause_ends, (label, key["key_name"])
        assert not (key["key_name"].endswith("_roaming") and set(key["key_name"].split("_")) & subjects), key
        examples = [rows[i]["payload"]["other"] for i, lab in enumerate(labels) if lab == label]
        constraints = parse_constraints(key["semantic_description"])
        if key["key_type"] == "boolean":
            assert set(key["key_name"].split("_")) & words[label], (label, key["key_name"])
            assert any(f"'{e}' -> true" in key["semantic_description"] for e in examples)
        else:  # a closed set: its values are words of the intent, its examples map to them
            assert key["key_type"] == "string" and len(constraints.enum) >= 3, (label, key)
            assert (set(key["key_name"].split("_")) | set(constraints.enum)) & words[label], (label, key)
            assert any(f"'{e}' -> '" in key["semantic_description"] for e in examples)
    assert list(report["clusters"][0]) == CLUSTER_FIELDS
    kinds = Counter(e["kind"] for e in report["events"])
    assert kinds["patch-published"] == 6 and kinds["cluster-triggered"] == 6


@pytest.mark.slow
def test_own_corpus_with_other_phrasings_numbers_and_a_conflict(minilm: MiniLMEmbedder) -> None:
    report, labels, rows = run("field_other_corpus.jsonl", minilm)
    # vip_customer splits into two clusters of 5 fragments from 3 clients each (institutions served by
    # the site: hospital, bank, police; customers affected: VIP, enterprise, premium): centroids 0.28
    # apart, mean similarity across 0.14, below every merge of one-offs the merge test refuses
    # (docs/evolution.md, section 4). Neither half passes the trigger on its own.
    by_label = check_corpus(report, labels, rows, missed=frozenset({"cluster:vip_customer"}))
    throughput = by_label["cluster:min_throughput"]["new_keys"][0]
    assert throughput["key_type"] == "integer" and throughput["key_name"].endswith("_mbps")
    tilt = by_label["conflict:antenna_tilt"]
    assert tilt["new_keys"] == [] and [k["key_name"] for k in tilt["modified_keys"]] == ["antenna_tilt_delta_deg"]
    assert tilt["modified_keys"][0]["key_type"] == "number"  # never retyped


def test_every_refused_line_is_reported_with_its_1_based_number_and_reason(tmp_path: Path) -> None:
    good = {
        "timestamp": "2026-10-05T06:00:00Z",
        "client_id": "c1",
        "schema_id": "energy_saving_adjust_v1",
        "payload": {"cell_ids": ["CELL-0401"], "action": "reduce", "other": "hot cabinet"},
        "label": "whatever",
        "extra": [1, 2],
    }
    refused = dict(good, payload={"cell_ids": "CELL-0401", "action": "reduce"})
    unknown = dict(good, schema_id="no_such_schema_v9")
    lines = [
        json.dumps(good),
        "not json",
        json.dumps({"timestamp": "2026-10-05T06:00:00Z"}),
        "",
        json.dumps(dict(good, timestamp="yesterday")),
        json.dumps(refused),
        "[1, 2]",
        json.dumps(unknown),
    ]
    records, invalid = parse_lines(lines)
    assert [r.line_no for r in records] == [0, 5, 7]
    assert [r.line for r in invalid] == [2, 3, 5, 7]
    report = replay(lines, FakeEmbedder()).to_dict()
    assert report["fragments"] == 1 and report["clusters"][0]["members"] == [0]
    assert report["clusters"][0]["member_lines"] == [1]  # numbered as the rejected lines are
    assert report["accepted"] == 1
    rejected = report["rejected"]
    # Every non-blank line is either accepted or rejected: nothing vanishes.
    assert report["accepted"] + len(rejected) == sum(1 for line in lines if line.strip())
    assert [r["line"] for r in rejected] == [2, 3, 5, 6, 7, 8]
    reasons = {r["line"]: r["reason"] for r in rejected}
    assert reasons[2].startswith("not JSON")
    assert "missing client_id, schema_id, payload" in reasons[3]
    assert "cell_ids: expected an array, got string 'CELL-0401'" in reasons[6]
    assert reasons[7] == "not a JSON object"
    assert "unknown schema_id 'no_such_schema_v9'" in reasons[8]


def test_lines_are_replayed_in_time_order_and_thresholds_apply(tmp_path: Path) -> None:
    from an_agent.evolution.config import EvolutionConfig

    def line(ts: str, client: str) -> str:
        return json.dumps(
            {
                "timestamp": ts,
                "client_id": client,
                "schema_id": "energy_saving_adjust_v1",
                "payload": {"cell_ids": ["CELL-1"], "action": "reduce", "other": "hot cabinet"},
            }
        )

    lines = [line("2026-10-05T06:02:00Z", "b"), line("2026-10-05T06:00:00Z", "a"), line("2026-10-05T06:01:00Z", "c")]
    strict = replay(lines, FakeEmbedder()).to_dict()
    assert strict["patches"] == [] and strict["clusters"][0]["members"] == [1, 2, 0]
    loose = EvolutionConfig(heat_threshold=20, min_distinct_clients=3)
    report = replay(lines, FakeEmbedder(), config=loose).to_dict()
    assert len(report["patches"]) == 1 and report["patches"][0]["timestamp"] == "2026-10-05T06:02:00.000000Z"


@pytest.mark.slow
@pytest.mark.parametrize(
    "corpus",
    [
        "dev_other_corpus.jsonl",
        "field_other_corpus.jsonl",
        # 'the customer changed his phone number', 'call the customer back after 6 pm' are as close to the
        # refund requests as those are to each other on MiniLM (leave-one-out 0.47-0.57); without their
        # participant they are not, and the synthesis sets them aside (`participants`).
        "heldout_noise_corpus.jsonl",
    ],
)
def test_noise_and_weak_intents_stay_out_of_the_patch_core(corpus: str, minilm: MiniLMEmbedder) -> None:
    """The cohesion gate: the fragments that make each patch are (nearly) all of its intent."""
    report, labels, rows = run(corpus, minilm)
    members = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    for patch in report["patches"]:
        cluster = members[patch["cluster_id"]]
        label = majority(labels, cluster)
        core = core_of(minilm.embed([rows[m]["payload"]["other"] for m in cluster]))
        core_labels = [labels[cluster[i]] for i in core.members]
        purity = sum(lab == label for lab in labels_of(cluster, labels)) / len(cluster)
        core_purity = core_labels.count(label) / len(core_labels)
        assert core_purity >= purity and core_purity >= 0.8, (label, purity, core_purity)
        # ... and keep most of the intent's own fragments (the loosest paraphrases may be set aside).
        assert core.cohesion >= 0.55 and core_labels.count(label) >= 0.75 * purity * len(cluster), (label, core)
        if corpus.startswith("dev"):
            assert core_purity == 1.0, (label, core_labels)  # incl. the weak 'energy report' lines and 2 one-offs


def purities(report: dict[str, Any], labels: list[str]) -> dict[str, float]:
    """Share of each patched cluster's fragments that carry its majority label, per majority label."""
    members = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    out = {}
    for patch in report["patches"]:
        cluster = members[patch["cluster_id"]]
        label = majority(labels, cluster)
        out[label] = labels_of(cluster, labels).count(label) / len(cluster)
    return out


@pytest.mark.slow
def test_a_weak_intent_sharing_words_is_not_absorbed_by_an_intent_cluster(minilm: MiniLMEmbedder) -> None:
    """Dev corpus: the 3 'energy report for the site owner' lines stay out of the high-temperature cluster."""
    report, labels, _ = run("dev_other_corpus.jsonl", minilm)
    check_corpus(report, labels, _)
    for cluster in report["clusters"]:
        names = labels_of(cluster["members"], labels)
        if "cluster:high_temperature" in names:
            assert "weak:energy_report" not in names, names
    assert min(purities(report, labels).values()) >= 0.9, purities(report, labels)


@pytest.mark.slow
def test_held_out_noise_corpus_one_patch_per_intent_and_no_catch_all(minilm: MiniLMEmbedder) -> None:
    """Our held-out corpus (words shared between intents, weak intents and one-offs; data/README.md).

    Every intent gives one patch, nothing else does, and no cluster holds two recurring intents (before
    clusters were compared as wholes, 'refund the customer' and 'the app cannot reach the car' merged
    into one 29-fragment cluster and one intent got no patch). Purity is >= 0.83 but for customer
    compensation: one-offs about 'the customer' join it one by one and its core keeps them
    (docs/evolution.md, section 4). Since a patch waits for its typing sample the cluster stays open
    past its trigger: the remote-app cluster takes a one-off and a weak line meanwhile (10 of 12, was
    9 of 10 at the trigger); closing it to drift at the trigger keeps them out but also the power
    cluster's mains / generator lines, which its key needs to be an enumeration.
    """
    report, labels, rows = run("heldout_noise_corpus.jsonl", minilm)
    check_corpus(report, labels, rows)
    for cluster in report["clusters"]:
        intents = {lab for lab in labels_of(cluster["members"], labels) if lab.startswith("cluster:")}
        assert len(intents) <= 1, (cluster["cluster_id"], intents)
    purity = purities(report, labels)
    assert purity.pop("cluster:customer_compensation") >= 0.65
    assert min(purity.values()) >= 0.83, purity


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["dev_other_corpus.jsonl", "field_other_corpus.jsonl"])
def test_a_patched_cluster_is_its_core(corpus: str, minilm: MiniLMEmbedder) -> None:
    """At its patch a cluster lets go of what its core set aside, and takes only core fragments after:
    its members (as the replay reports them) are of its intent, and the core keeps most of them."""
    report, labels, rows = run(corpus, minilm)
    check_corpus(report, labels, rows, missed=frozenset({"cluster:vip_customer"}))  # every line in one cluster
    assert min(purities(report, labels).values()) >= 0.9, purities(report, labels)
    patched = {p["cluster_id"] for p in report["patches"]}
    shares = [c["core_share"] for c in report["clusters"] if c["cluster_id"] in patched]
    assert len(shares) == len(patched) and min(shares) >= 0.75, shares


def labels_of(cluster: list[int], labels: list[str]) -> list[str]:
    return [labels[m] for m in cluster]


RECALL_MISSED = frozenset({"cluster:wildlife_damage", "cluster:obstruction"})


@pytest.mark.slow
def test_held_out_recall_corpus_no_spurious_patch_and_what_gathers_today(minilm: MiniLMEmbedder) -> None:
    """Our fourth held-out corpus (intents worded as varied instances of a category; data/README.md).

    No one-off makes a patch and no intent two. Five of seven intents give a patch; the wildlife damage
    (rats, birds' nests, a woodpecker, ...) stays in two halves. The obstruction and temporary-cell lines
    meet in one cluster (a merge at the merge test's bar); the cohesion gate splits it into its two ideas
    (`cohesion._two_ideas`) and the temporary cell makes the patch, where it used to be made of both
    (16 fragments, 56 % obstruction, an enumeration of their shared words, `mobile_type`). The obstruction
    lines it released are scattered over small clusters and make no patch (docs/evolution.md, section 4,
    "Recall"). If a clustering change moves these numbers, this test says so: update the docs' tables.
    """
    report, labels, rows = run("heldout_recall_corpus.jsonl", minilm)
    patches = check_corpus(report, labels, rows, missed=RECALL_MISSED)
    purity = purities(report, labels)
    assert purity["cluster:temporary_cell"] >= 0.8, purity
    assert min(purity.values()) >= 0.7, purity
    assert patches["cluster:temporary_cell"]["new_keys"][0]["key_type"] == "boolean"  # not an enum of two ideas


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="varied-instance halves score like one-offs on MiniLM (docs/evolution.md)")
def test_held_out_recall_corpus_every_intent_gathers_into_one_pure_patch(minilm: MiniLMEmbedder) -> None:
    """The target of issue 14 on this corpus: one patch per intent, each cluster >= 90 % of its intent."""
    report, labels, rows = run("heldout_recall_corpus.jsonl", minilm)
    check_corpus(report, labels, rows)
    assert min(purities(report, labels).values()) >= 0.9, purities(report, labels)
