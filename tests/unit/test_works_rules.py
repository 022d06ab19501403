"""The works wing's pure rules: its policy settings, plans, who may edit, overrides and pipeline settings."""

from datetime import timedelta

import pytest

from models.accounts.tables import Role
from models.core.errors import Forbidden, InvalidInput
from models.core.policy import Policy
from models.timing.cadence import Cadence
from models.works.access import check_may_edit_works, check_may_set_notifications, may_edit_works
from models.works.pipelines import Generation, PipelineResult
from models.works.pipelines import log_pipeline, webhook_pipeline
from models.works.plans import DEFAULT_PLANS_PARSED, parse_plans
from models.works.plugins import BUILT_INS, check_overrides, find_plugin


def test_work_timeouts_are_ordered_pipeline_then_task_then_stuck_and_the_policy_refuses_anything_else():
    policy = Policy()
    assert policy.work_pipeline_timeout < policy.work_task_timeout < policy.work_stuck_timeout == timedelta(hours=1)
    for overrides in ({"work_pipeline_timeout": 2700}, {"work_task_timeout": 3600}, {"work_stuck_timeout": 60}):
        with pytest.raises(ValueError, match="work timeouts must be ordered"):
            policy.with_overrides(overrides)
    small = policy.with_overrides({"work_pipeline_timeout": 1, "work_task_timeout": 2, "work_stuck_timeout": 3})
    assert small.work_stuck_timeout == timedelta(seconds=3)


@pytest.mark.parametrize("seconds, ok", [(60, True), (300, True), (900, True), (3600, True), (0, False),
                                         (90, False), (420, False), (7200, False)])
def test_fr3_the_dispatch_interval_is_whole_minutes_dividing_the_hour(seconds, ok):
    if ok:
        assert Policy().with_overrides({"work_dispatch_interval": seconds}).work_dispatch_interval.seconds == seconds % 86400
    else:
        with pytest.raises(ValueError, match="work_dispatch_interval is whole minutes dividing the hour"):
            Policy().with_overrides({"work_dispatch_interval": seconds})


def test_fr7_the_batch_is_capped_and_at_least_one():
    assert Policy().work_max_batch == 100
    with pytest.raises(ValueError, match="work_max_batch"):
        Policy().with_overrides({"work_max_batch": 0})


def test_fr12_the_default_plans_and_their_refusals():
    plans = DEFAULT_PLANS_PARSED
    assert plans.allowed("free") == {Cadence.DAILY, Cadence.WEEKLY, Cadence.MONTHLY}
    assert plans.allowed("pro") == plans.allowed("free") | {Cadence.EVERY_12_HOURS, Cadence.EVERY_8_HOURS}
    assert plans.allowed("business") == set(Cadence)
    assert plans.refusal("free", Cadence.HOURLY, "usage") is None
    assert "not in the free plan" in plans.refusal("free", Cadence.HOURLY, "subscription")
    assert "'gold' is not configured" in plans.refusal("gold", Cadence.DAILY, "subscription")
    with pytest.raises(InvalidInput) as refused:
        plans.check("pro", Cadence.EVERY_3_HOURS, "subscription")
    assert (refused.value.code, refused.value.field, refused.value.status) == ("cadence_not_in_plan", "cadence", 422)


@pytest.mark.parametrize("raw, words", [
    ("{", "not valid JSON"), ("[]", "must be a JSON object"), ('{"free": "daily"}', "must list its cadences"),
    ('{"free": ["Daily"]}', "'Daily' is not a cadence"), ('{"": ["daily"]}', "1 to 32 characters"), ("{}", "JSON object"),
])
def test_a_bad_plans_setting_is_refused_by_name(raw, words):
    with pytest.raises(ValueError, match="TICKWORK_PLANS_JSON") as refused:
        parse_plans(raw)
    assert words in str(refused.value)


def test_plans_are_configurable():
    plans = parse_plans('{"team": ["hourly", "daily"]}')
    assert plans.allowed("team") == {Cadence.HOURLY, Cadence.DAILY} and plans.allowed("free") == set()


@pytest.mark.parametrize("role, edit, notifications", [(Role.MARKETER, False, False), (Role.OPS, True, False),
                                                        (Role.ADMIN, True, True)])
def test_work_edit_rights_are_ops_and_admins_and_notification_settings_the_admins(role, edit, notifications):
    assert may_edit_works(role) is edit
    for allowed, check in ((edit, check_may_edit_works), (notifications, check_may_set_notifications)):
        if allowed:
            check(role)
        else:
            with pytest.raises(Forbidden, match="You need the"):
                check(role)


def test_fr11_overrides_name_a_capability_and_a_plugin_of_it_and_null_removes_a_key():
    assert set(BUILT_INS) == {"log", "webhook"}
    assert check_overrides({"pipeline": "webhook", "search": None}, registry=BUILT_INS) == {"pipeline": "webhook"}
    for overrides, field, code in (({"Search": "x"}, "providerOverrides.Search", "unknown_capability"),
                                   ({"ai": "log"}, "providerOverrides.ai", "wrong_capability"),
                                   ({"ai": ""}, "providerOverrides.ai", "wrong_type"),
                                   ({"ai": "gpt"}, "providerOverrides.ai", "plugin_not_installed"),
                                   ("log", "providerOverrides", "wrong_type")):
        with pytest.raises(InvalidInput) as refused:
            check_overrides(overrides, registry=BUILT_INS)
        assert (refused.value.field, refused.value.code) == (field, code)
    assert find_plugin("log", "pipeline", field="pipeline", registry=BUILT_INS).source == "built-in"


def test_the_built_in_pipelines_check_their_settings():
    assert log_pipeline.check_settings({"seconds": 2.5}, None) == {"seconds": 2.5}
    for bad in ({"seconds": "2"}, {"seconds": 4000}, {"fail": ""}, {"other": 1}):
        with pytest.raises(ValueError, match="settings\\."):
            log_pipeline.check_settings(bad, None)
    assert webhook_pipeline.check_settings({"url": " https://hook.test/x "}, "https://t.test") == {
        "url": "https://hook.test/x"}
    with pytest.raises(webhook_pipeline.BaseUrlMissing):
        webhook_pipeline.check_settings({"url": "https://hook.test/x"}, None)
    for bad in ({"url": "hook.test"}, {}, {"url": "https://x", "secret": "s"}):
        with pytest.raises(ValueError, match="settings\\."):
            webhook_pipeline.check_settings(bad, "https://t.test")


def test_the_log_pipeline_succeeds_or_fails_as_told_and_never_outlasts_its_timeout():
    generation = Generation(work_id=1, work_name="w", workspace_id=1, run_id=1, run_kind="manual", token="t",
                            slot=None, settings={"seconds": 3600}, timeout=timedelta(milliseconds=10))
    assert log_pipeline.run(generation) == PipelineResult.generated()
    failing = Generation(**{**generation.__dict__, "settings": {"fail": "no source"}})
    assert log_pipeline.run(failing) == PipelineResult.failed("no source")
