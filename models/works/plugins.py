"""The plugin registry: the built-in pipelines plus every plugin installed through an entry point.

A plugin has an id and exactly one capability, one of the seed's ``providerOverrides`` keys:
``ai``, ``search``, ``screenshot``, ``contentExtractor``, ``pipeline``. Plugins are found the
way pytest and Flask find theirs: Python entry points, group ``tickwork.plugins``; the entry
point's name is the plugin's id and it loads to an object (a module, a class, an instance)
with:

- ``capability``: one of the five (required);
- ``description``: one line for the dashboard and ``tickwork plugins`` (optional);
- for a pipeline, ``run(generation) -> PipelineResult`` and optionally
  ``check_settings(settings, base_url) -> dict`` (raise ``ValueError`` naming what is wrong).

A distribution declares one in its packaging metadata::

    [project.entry-points."tickwork.plugins"]
    acme-search = "acme_tickwork:SearchPlugin"

The built-ins are the pipelines ``log`` and ``webhook`` (:mod:`models.works.pipelines`). An
entry point that fails to load, lacks a capability, or reuses a built-in's id is listed with
its error and can be chosen by nobody. The registry is read afresh on each call: installing
or removing a distribution is seen without a restart of the reader, and a run whose chosen
plugin is gone fails with a clear error instead of a crash.
"""

from dataclasses import dataclass
from importlib.metadata import entry_points

from models.core.errors import InvalidInput
from models.works.pipelines import log_pipeline, webhook_pipeline
from models.works.tables import PROVIDER_CAPABILITIES

ENTRY_POINT_GROUP = "tickwork.plugins"
BUILT_IN = "built-in"


@dataclass(frozen=True)
class Plugin:
    """One entry of the registry; ``error`` says why it cannot be used (then ``target`` is None)."""

    id: str
    capability: str | None
    source: str  # "built-in", or the distribution that installed it
    description: str = ""
    target: object | None = None
    error: str | None = None

    @property
    def usable(self) -> bool:
        return self.error is None


BUILT_INS = {
    module.PLUGIN_ID: Plugin(module.PLUGIN_ID, "pipeline", BUILT_IN, module.DESCRIPTION, module)
    for module in (log_pipeline, webhook_pipeline)
}


def _loaded(entry_point) -> Plugin:
    """The plugin behind one entry point, or its load error (a broken plugin never breaks the registry)."""
    source = entry_point.dist.name if entry_point.dist is not None else "unknown distribution"
    try:
        target = entry_point.load()
    except Exception as exc:  # any import-time failure of third-party code is reported, not raised
        return Plugin(entry_point.name, None, source, error=f"fails to load: {type(exc).__name__}: {exc}")
    capability = getattr(target, "capability", None)
    if capability not in PROVIDER_CAPABILITIES:
        return Plugin(entry_point.name, None, source,
                      error=f"has no valid capability (one of {', '.join(PROVIDER_CAPABILITIES)}), got {capability!r}")
    if capability == "pipeline" and not callable(getattr(target, "run", None)):
        return Plugin(entry_point.name, capability, source, error="is a pipeline without a run(generation) function")
    description = getattr(target, "description", "") or ""
    return Plugin(entry_point.name, capability, source, str(description)[:200], target)


def installed_plugins() -> dict[str, Plugin]:
    """Every plugin, by id, built-ins first, then entry points by id."""
    found = dict(BUILT_INS)
    for entry_point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name):
        if entry_point.name in BUILT_INS:
            source = entry_point.dist.name if entry_point.dist is not None else "unknown distribution"
            found[f"{entry_point.name} ({source})"] = Plugin(entry_point.name, None, source,
                                                              error="reuses the id of a built-in plugin")
            continue
        if entry_point.name not in found:
            found[entry_point.name] = _loaded(entry_point)
    return found


def usable_by_capability(registry: dict[str, Plugin] | None = None) -> dict[str, list[Plugin]]:
    """The plugins that can be chosen, per capability (what the dashboard's selects offer)."""
    registry = installed_plugins() if registry is None else registry
    chosen: dict[str, list[Plugin]] = {capability: [] for capability in PROVIDER_CAPABILITIES}
    for plugin in registry.values():
        if plugin.usable:
            chosen[plugin.capability].append(plugin)
    return chosen


def find_plugin(plugin_id, capability: str, *, field: str, registry: dict[str, Plugin] | None = None) -> Plugin:
    """The installed, usable plugin ``plugin_id`` of ``capability``, or a 422 naming ``field``."""
    registry = installed_plugins() if registry is None else registry
    if not isinstance(plugin_id, str) or not plugin_id.strip():
        raise InvalidInput(f"{field} must be a plugin id (a string)", field=field, code="wrong_type")
    plugin = registry.get(plugin_id)
    if plugin is None:
        raise InvalidInput(f"{field}: no plugin {plugin_id!r} is installed", field=field, code="plugin_not_installed")
    if not plugin.usable:
        raise InvalidInput(f"{field}: plugin {plugin_id!r} {plugin.error}", field=field, code="plugin_broken")
    if plugin.capability != capability:
        raise InvalidInput(f"{field}: plugin {plugin_id!r} is a {plugin.capability} plugin, not {capability}",
                           field=field, code="wrong_capability")
    return plugin


def check_overrides(overrides, *, registry: dict[str, Plugin] | None = None) -> dict[str, str]:
    """``providerOverrides`` checked against the registry: capability -> plugin id; null removes a key.

    An unknown capability, an id that is not installed, or an id of another capability is a
    422 naming the key (``providerOverrides.search``).
    """
    if not isinstance(overrides, dict):
        raise InvalidInput("providerOverrides must be an object mapping capabilities to plugin ids",
                           field="providerOverrides", code="wrong_type")
    registry = installed_plugins() if registry is None else registry
    checked: dict[str, str] = {}
    for capability, plugin_id in overrides.items():
        field = f"providerOverrides.{capability}"
        if capability not in PROVIDER_CAPABILITIES:
            raise InvalidInput(f"{field}: unknown capability {capability!r}; one of {', '.join(PROVIDER_CAPABILITIES)}",
                               field=field, code="unknown_capability")
        if plugin_id is None:
            continue
        checked[capability] = find_plugin(plugin_id, capability, field=field, registry=registry).id
    return checked
