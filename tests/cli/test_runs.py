"""`prhub runs` says how each run ended: a week written whose post failed is no run done."""

from __future__ import annotations

from tests.factories import prhub, responder
from tests.standins.webhook import SECRET, WebhookStandIn

WEEK = ("weekly", "--week", "31", "--year", "2026")


def test_a_run_whose_post_failed_is_listed_as_such(env, llm):
    llm.responder = responder
    with WebhookStandIn("dingtalk") as hook:
        wrong = hook.hook.replace(SECRET, "expired0000token")
        failed = prhub({**env, "PRHUB_NOTIFY": wrong, "PRHUB_NOTIFY_FORMAT": "dingtalk"}, *WEEK)
        assert failed.exit_code == 19, failed.stderr
        posted = prhub({**env, "PRHUB_NOTIFY": hook.hook, "PRHUB_NOTIFY_FORMAT": "dingtalk"}, *WEEK)
        assert posted.exit_code == 0, posted.stderr
    listed = prhub(env, "runs")
    assert listed.exit_code == 0, listed.stderr
    newest, older = listed.stdout.splitlines()[:2]
    assert newest.endswith(" · done")
    assert older.endswith(
        " · post failed: the DingTalk webhook http://127.0.0.1/… refused the week's message "
        "(200, code 300005: token is not exist)"
    )
    assert "expired0000token" not in listed.stdout


def test_a_repository_of_weekly_all_whose_post_failed_is_listed_as_such(env, llm, tmp_path):
    llm.responder = responder
    (tmp_path / "prhub.toml").write_text('repos = ["acme/rocket"]\n')
    with WebhookStandIn("wecom") as hook:
        wrong = hook.hook.replace(SECRET, "expired0000token")
        run = {**env, "PRHUB_REPO": None, "PRHUB_NOTIFY": wrong, "PRHUB_NOTIFY_FORMAT": "wecom"}
        failed = prhub(run, *WEEK, "--all")
    assert failed.exit_code == 19, failed.stderr
    newest = prhub(env, "runs").stdout.splitlines()[0]
    assert " · post failed: the WeCom webhook http://127.0.0.1/… refused " in newest
