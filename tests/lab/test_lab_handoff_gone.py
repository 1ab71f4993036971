"""A task's end that its assigner already has does not hold the lab's clock when its executor's side never
comes: the executor's process died (or lost its control channel) just as it reported the end (found by lab
soak: the lab stalled on ``hand-off service-fault/...`` after a control-channel drop)."""

from __future__ import annotations

from an_agent.lab.conductor import Conductor, LabKernel
from an_agent.lab.journal import Journal
from an_agent.lab.network import SimNetwork
from an_agent.lab.spec import NetworkSpec

START = 1_000_000.0


def conductor() -> Conductor:
    kernel = LabKernel(START)
    network = SimNetwork(NetworkSpec((), (), (), ()), 0, kernel.now, kernel.call_at)
    return Conductor(kernel, network, Journal(kernel.now), lambda name: None, lambda name: None, {})


def test_an_end_the_assigner_has_is_settled_when_its_executor_is_gone() -> None:
    lab = conductor()
    handlers, kernel = lab.handlers(), lab.kernel
    key = {"key": ["service-fault", "complaint.ticket.1"]}
    handlers["hello"]({"agent": "complaint"})
    handlers["hello"]({"agent": "service-fault"})
    handlers["expect"]({"agent": "complaint", **key})
    handlers["complete"]({"agent": "complaint", **key})  # the notification came; the executor's arrive did not
    assert kernel.busy_labels() == {"hand-off service-fault/complaint.ticket.1": 1}
    lab.forget_agent("service-fault")
    assert kernel.busy_labels() == {}
    handlers["arrive"]({"agent": "service-fault", **key})  # a late arrival of the old process changes nothing
    assert kernel.busy_labels() == {}
    kernel.close()


def test_an_end_still_awaited_waits_for_the_restarted_executor() -> None:
    lab = conductor()
    handlers, kernel = lab.handlers(), lab.kernel
    key = {"key": ["service-fault", "complaint.ticket.2"]}
    handlers["hello"]({"agent": "complaint"})
    handlers["expect"]({"agent": "complaint", **key})
    lab.forget_agent("service-fault")  # died before its end: the restarted process resumes the task
    assert kernel.is_expected(("service-fault", "complaint.ticket.2"))
    kernel.close()


def test_an_end_from_a_restarted_executor_settles_the_whole_hand_off() -> None:
    """The restarted process ends the resumed task (a field ticket it cannot take up again: failed) without
    the old one's bookkeeping: the assigner's side is the whole hand-off."""
    lab = conductor()
    handlers, kernel = lab.handlers(), lab.kernel
    key = {"key": ["fme-copilot", "service-fault.ticket.LINK-A2"]}
    handlers["hello"]({"agent": "service-fault"})
    handlers["expect"]({"agent": "service-fault", **key})
    lab.forget_agent("fme-copilot")  # its control channel was cut: started again
    handlers["complete"]({"agent": "service-fault", **key})  # the new process failed the task
    assert kernel.busy_labels() == {}
    assert not kernel.is_expected(("fme-copilot", "service-fault.ticket.LINK-A2"))
    kernel.close()


def test_an_executor_gone_twice_after_its_hand_off_ended_is_no_error() -> None:
    """An orphaned hand-off that ended meanwhile is forgotten (found by lab soak: a KeyError on the next
    restart of the same agent made every restart fail)."""
    lab = conductor()
    handlers, kernel = lab.handlers(), lab.kernel
    key = {"key": ["ran-fault", "service-fault.verify.LINK-C2"]}
    handlers["hello"]({"agent": "service-fault"})
    handlers["expect"]({"agent": "service-fault", **key})
    lab.forget_agent("ran-fault")
    lab.forget_agent("service-fault")  # the assigner restarted too: nobody waits for that end any more
    lab.forget_agent("ran-fault")  # restarted again
    assert kernel.busy_labels() == {}
    kernel.close()
