"""``log``: the built-in pipeline that needs nothing outside; it logs the generation and succeeds.

Settings (all optional): ``seconds``, how long the generation takes (0 by default, at most
the pipeline timeout: a stand-in for real work, for demos and tests), and ``fail``, a
message to fail with instead (to see failures, retries and auto-pause without an outside
system).
"""

import logging
import time

from models.works.pipelines import Generation, PipelineResult

PLUGIN_ID = "log"
DESCRIPTION = "Logs each generation and succeeds; settings: seconds (a stand-in duration), fail (a message to fail with)"
capability = "pipeline"

log = logging.getLogger("tickwork.works.log")


def check_settings(settings: dict, base_url: str | None) -> dict:
    """``seconds`` a number from 0 to 3600, ``fail`` a string; nothing else."""
    unknown = sorted(set(settings) - {"seconds", "fail"})
    if unknown:
        raise ValueError(f"settings.{unknown[0]}: the log pipeline takes only seconds and fail")
    seconds = settings.get("seconds", 0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= 3600:
        raise ValueError("settings.seconds: a number of seconds from 0 to 3600")
    fail = settings.get("fail")
    if fail is not None and (not isinstance(fail, str) or not fail.strip() or len(fail) > 500):
        raise ValueError("settings.fail: a message of 1 to 500 characters")
    return {key: value for key, value in settings.items() if value is not None}


def run(generation: Generation) -> PipelineResult:
    """Log the generation, take ``seconds`` (never past the timeout), succeed or fail as told."""
    seconds = min(float(generation.settings.get("seconds", 0)), generation.timeout.total_seconds())
    if seconds > 0:
        time.sleep(seconds)
    log.info("work %s (%s): %s run %s, providers %s", generation.work_id, generation.work_name,
             generation.run_kind, generation.run_id, generation.providers or "default")
    if generation.settings.get("fail"):
        return PipelineResult.failed(str(generation.settings["fail"]))
    return PipelineResult.generated()
