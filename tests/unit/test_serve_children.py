"""``tickwork serve``'s children: one web process, one consumer per ``--consumers``, one works consumer."""

import pytest

from jobs.serve import Supervisor


def test_serve_starts_a_web_child_one_consumer_and_a_works_consumer_with_one_worker_by_default():
    children = Supervisor.for_single_box(host="127.0.0.1", port=5000).children
    assert [child.name for child in children] == ["web", "consumer", "works-consumer"]
    works = children[-1].argv
    assert works[works.index("--queue") + 1] == "works" and works[works.index("--workers") + 1] == "1"


def test_extra_consumers_drain_but_leave_the_clock_jobs_to_the_first():
    children = Supervisor.for_single_box(host="127.0.0.1", port=5000, consumers=3).children
    assert [child.name for child in children] == ["web", "consumer", "consumer-2", "consumer-3", "works-consumer"]
    assert "--no-periodic" not in children[1].argv
    assert all(child.argv[-1] == "--no-periodic" and "consumer" in child.argv for child in children[2:])


def test_serve_refuses_zero_consumers():
    with pytest.raises(ValueError):
        Supervisor.for_single_box(host="127.0.0.1", port=5000, consumers=0)


def test_serve_waits_for_its_consumers_drain_before_killing_them():
    from jobs.consumer import drain_seconds
    from models.core.policy import Policy

    drain = drain_seconds(Policy())  # the 30 s provider timeout and the outcome's writes
    assert drain > 30
    assert Supervisor.for_single_box(host="127.0.0.1", port=5000, drain=drain).grace > drain
    assert Supervisor.for_single_box(host="127.0.0.1", port=5000).grace >= 15
