"""The docs say what the code does: every clock job in the operations guide, every setting in the README,
and no promise the engine does not keep."""

import re

from jobs.periodic import CLOCK_JOBS
from tests.conftest import ROOT

SHELLS = ("webapp", "jobs", "models")


def settings_read_by_the_code() -> set[str]:
    found = set()
    for package in SHELLS:
        for source in (ROOT / package).rglob("*.py"):
            text = source.read_text()
            found |= set(re.findall(r"environ(?:\.get)?[(\[]\s*[\"'](TICKWORK_[A-Z0-9_]+)", text))
            found |= set(re.findall(r"envvar=[\"'](TICKWORK_[A-Z0-9_]+)", text))
    return found


def readme_configuration_table() -> set[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(TICKWORK_[A-Z0-9_]+)` \|", section, re.M))


def test_every_setting_the_code_reads_is_in_the_readmes_configuration_table():
    read = settings_read_by_the_code()
    assert {"TICKWORK_DATABASE_URL", "TICKWORK_NPM_REGISTRY"} <= read
    assert read - readme_configuration_table() == set()


def test_the_operations_guide_lists_every_clock_job():
    guide = (ROOT / "docs" / "operations.md").read_text()
    clock = guide.split("## The clock", 1)[1]
    for job in CLOCK_JOBS:
        assert re.search(rf"^\| `{job.name}` \|", clock, re.M), f"{job.name} is missing from docs/operations.md"


def test_nothing_promises_exactly_once_where_the_engine_guarantees_at_most_once():
    for document in ("README.md", "pyproject.toml", "docs/operations.md", "docs/architecture.md"):
        text = (ROOT / document).read_text().lower()
        assert "exactly once" not in text and "exactly-once" not in text, document
    assert "at most once" in (ROOT / "README.md").read_text()
