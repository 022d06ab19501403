"""The clock's commands: one per clock job (``tickwork tick``, ...), ``consumer`` and ``serve``."""

import json

import click
from flask import Flask
from flask.cli import with_appcontext

from jobs.periodic import CLOCK_JOBS, ClockJob
from jobs.queue import QUEUES, huey


def _clock_job_command(job: ClockJob) -> click.Command:
    @with_appcontext
    def command(dry_run: bool = False):
        summary = job.dry_run() if dry_run else job.run()
        click.echo(json.dumps(summary, sort_keys=True, default=str))

    command.__doc__ = f"Run one {job.name} pass now and print its summary as JSON. {job.help}"
    params = []
    if job.dry_run is not None:
        params.append(click.Option(["--dry-run"], is_flag=True, help="Say what a pass would do; write nothing."))
    return click.Command(job.name, callback=command, help=command.__doc__, params=params)


@click.command("recover")
@with_appcontext
def recover_command():
    """Fail rows left submitted by dead workers (worker lost; outcome unknown) and print the summary."""
    from jobs.clock import recover_once

    click.echo(json.dumps(recover_once(), sort_keys=True, default=str))


@click.command("consumer")
@click.option("--workers", default=4, show_default=True, help="worker threads")
@click.option("--no-periodic", is_flag=True, help="do not enqueue the clock jobs from this consumer")
@click.option("--name", default=None, help="heartbeat name (default host:pid)")
@click.option("--queue", type=click.Choice(sorted(QUEUES)), default="default", show_default=True,
              help="default: the clock jobs and the sends; works: work generations")
@with_appcontext
def consumer_command(workers, no_periodic, name, queue):
    """Run a queue consumer: dispatch tasks and (unless --no-periodic) the clock jobs; or, with --queue works,
    work generations."""
    from flask import current_app

    from jobs.consumer import run_consumer

    if huey.immediate:
        raise click.ClickException("TICKWORK_QUEUE_URL=immediate runs tasks inline; a consumer needs a queue "
                                   "(sqlite:///..., postgresql://... or redis://...)")
    run_consumer(current_app._get_current_object(), workers=workers, periodic=not no_periodic, name=name, queue=queue)


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=5000, show_default=True, type=int)
@click.option("--web-workers", default=2, show_default=True, help="gunicorn worker processes")
@click.option("--consumer-workers", default=4, show_default=True, help="consumer worker threads")
@click.option("--consumers", default=1, show_default=True, type=click.IntRange(min=1),
              help="consumer processes (one per core drains fastest)")
@click.option("--works-workers", default=1, show_default=True, type=click.IntRange(min=1),
              help="worker threads of the works queue's consumer (work generations)")
@with_appcontext
def serve_command(host, port, web_workers, consumer_workers, consumers, works_workers):
    """Run Tickwork on one box: a web process, a consumer and a works consumer, restarted if they die."""
    from flask import current_app

    from jobs.consumer import drain_seconds
    from jobs.serve import Supervisor
    from models.core.runtime import runtime

    # The shells above register what must hold before serving (the dashboard's static assets).
    problems = [problem for check in current_app.extensions.get("tickwork.serve_checks", ()) for problem in check()]
    if problems:
        raise click.ClickException(f"not serving a dashboard that cannot work: {'; '.join(problems)}. "
                                   "Run `tickwork assets` to fetch it.")

    raise SystemExit(Supervisor.for_single_box(host=host, port=port, web_workers=web_workers,
                                               consumer_workers=consumer_workers, consumers=consumers,
                                               works_workers=works_workers,
                                               drain=drain_seconds(runtime().policy)).run())


@click.command("plugins")
@with_appcontext
def plugins_command():
    """List the plugin registry: the built-in pipelines and every plugin installed through an entry point."""
    from models.works.plugins import installed_plugins

    for plugin in installed_plugins().values():
        state = f"BROKEN: {plugin.error}" if plugin.error else plugin.description
        click.echo(f"{plugin.id:<24} {plugin.capability or '-':<17} {plugin.source:<24} {state}")


def init_app(app: Flask) -> None:
    for job in CLOCK_JOBS:
        app.cli.add_command(_clock_job_command(job))
    for command in (recover_command, consumer_command, serve_command, plugins_command):
        app.cli.add_command(command)
