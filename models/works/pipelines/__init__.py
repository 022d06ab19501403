"""What a pipeline plugin is handed and what it answers, and the two built-in pipelines.

A pipeline's ``run(generation)`` is called by the generation task on the ``works`` queue,
with no database transaction open, and answers one :class:`PipelineResult`:

| status      | meaning                                                                  | the run  |
|-------------|--------------------------------------------------------------------------|----------|
| `generated` | the work was regenerated                                                 | succeeded |
| `error`     | it was not; ``error`` says why in words an operator understands          | failed   |
| `waiting`   | an outside system took the work and will POST the result to ``callback_url`` before the pipeline timeout | waiting, then succeeded or failed by the callback, or failed when the timeout passes |

A pipeline must return within ``generation.timeout`` (the policy's ``work_pipeline_timeout``);
the Huey task's bound and the stuck timeout come after it.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Generation:
    """One generation as a pipeline sees it."""

    work_id: int
    work_name: str
    workspace_id: int
    run_id: int
    run_kind: str  # scheduled or manual
    token: str  # the run's token; a callback carries it
    slot: datetime | None  # the grid slot a scheduled run belongs to
    settings: dict  # the work's pipeline settings
    providers: dict[str, str] = field(default_factory=dict)  # capability -> chosen plugin id
    provider_targets: dict[str, object] = field(default_factory=dict)  # capability -> the loaded plugin
    secret: str | None = None  # the work's signing key (webhook pipeline)
    callback_url: str | None = None  # where an outside system POSTs the result
    timeout: timedelta = timedelta(minutes=30)


@dataclass(frozen=True)
class PipelineResult:
    status: str  # generated, error, waiting
    error: str | None = None

    GENERATED = "generated"
    ERROR = "error"
    WAITING = "waiting"

    @classmethod
    def generated(cls) -> "PipelineResult":
        return cls(cls.GENERATED)

    @classmethod
    def failed(cls, error: str) -> "PipelineResult":
        return cls(cls.ERROR, error)

    @classmethod
    def waiting(cls) -> "PipelineResult":
        return cls(cls.WAITING)
