"""What retention takes along with an action is every table that names one: a new table naming an
action (or a drip send) must be taken along too, or its foreign key would stop every prune."""

import models.wings  # noqa: F401  (every table on the metadata)
from models.core.base import Base
from models.retention.archive_files import ARCHIVED_TABLES, file_name
from models.retention.archiving import TAKEN_WITH_ACTIONS, TAKEN_WITH_SENDS


def _naming(table_name: str) -> set[str]:
    return {fk.parent.table.name for table in Base.metadata.tables.values() for fk in table.foreign_keys
            if fk.column.table.name == table_name}


def test_every_table_naming_an_action_leaves_with_it():
    assert _naming("scheduled_actions") - {"scheduled_actions"} == TAKEN_WITH_ACTIONS
    assert _naming("drip_sends") == TAKEN_WITH_SENDS


def test_only_the_usage_ledger_names_a_work_run_and_it_is_never_pruned():
    assert _naming("work_runs") == {"work_usage"}


def test_the_archive_files_mirror_the_live_tables_they_keep():
    assert set(ARCHIVED_TABLES) <= set(Base.metadata.tables)
    assert set(ARCHIVED_TABLES) == ({"scheduled_actions", "work_runs", "work_events"}
                                    | (TAKEN_WITH_ACTIONS - {"action_holds"}) | TAKEN_WITH_SENDS)
    assert file_name("2026-03") == "tickwork-archive-2026-03.db"
