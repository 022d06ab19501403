"""A channel kind is accepted exactly when a provider is registered for it: no list of kinds to keep elsewhere."""

import types

import pytest

from models.channels import providers
from models.channels.operations import validate_channel
from models.core.errors import InvalidInput


def test_a_kind_is_accepted_only_when_a_provider_is_registered_for_it(monkeypatch):
    with pytest.raises(InvalidInput) as refused:
        validate_channel("pigeons", "carrier-pigeon", {})
    assert refused.value.field == "kind" and "carrier-pigeon" in refused.value.message
    for kind in providers.PROVIDERS:
        assert kind in refused.value.message  # the refusal lists what is registered
    module = types.SimpleNamespace(kind="carrier-pigeon", honours_idempotency_key=False, send=lambda *_: None)
    monkeypatch.setitem(providers.PROVIDERS, "carrier-pigeon", module)
    validate_channel("pigeons", "carrier-pigeon", {})  # registered: accepted, with no other change
    monkeypatch.delitem(providers.PROVIDERS, "log")
    with pytest.raises(InvalidInput):
        validate_channel("main", "log", {})


@pytest.mark.parametrize("kind", [None, 5, ["log"], "LOG", ""])
def test_a_kind_that_is_not_a_registered_name_is_refused_naming_the_field(kind):
    with pytest.raises(InvalidInput) as refused:
        validate_channel("main", kind, {})
    assert refused.value.field == "kind"
