"""Posting a week: as a discussion and to a chat webhook, once a week and target."""

from __future__ import annotations

from dataclasses import dataclass, field

from github import Github

from prhub.config import Settings
from prhub.errors import PrhubError
from prhub.model import WeeklyReport
from prhub.publish import discuss, notify
from prhub.publish.brief import brief_of, markdown
from prhub.store.store import Store


@dataclass
class Posted:
    """What posting a week did: the report with its discussion's page, lines for the operator,
    and the posts that failed (each rerun retries them)."""

    report: WeeklyReport
    done: list[str] = field(default_factory=list)
    failed: list[PrhubError] = field(default_factory=list)


def post_week(
    report: WeeklyReport, settings: Settings, store: Store, client: Github | None
) -> Posted:
    """Posts the week as a discussion (`client` given) and to a chat webhook, as the settings
    ask: once a week and target, a discussion updated in place when its text changed."""
    posted = Posted(report)
    f = report.facts
    if f.pr_count == 0 and not report.failed:
        posted.done.append("nothing posted: no PR was merged in the week")
        return posted
    target = settings.discuss_repo or f.repo
    url = report.meta.discussion_url or ""
    if url and not discuss.page(url, target, settings.github_url):
        url = ""  # a page elsewhere (an imported report's) is neither linked nor updated
    if settings.discuss and client is not None:
        b = brief_of(report, settings)
        was = store.post(f.repo, f.start, f.end, target.lower()) or discuss.known(url, target)
        try:
            made, line = discuss.publish(
                discuss.GitHubPosts(client, settings),
                target,
                settings.discuss,
                (b.title, markdown(b)),
                was,
            )
        except PrhubError as exc:
            posted.failed.append(exc)
        else:
            if made != was:
                store.save_post(f.repo, f.start, f.end, made)
            posted.done.append(line)
            if made.url != url:
                url = made.url
                meta = report.meta.model_copy(update={"discussion_url": url})
                posted.report = report.model_copy(update={"meta": meta})
                store.save_report(posted.report)  # a site built later links it too
    if settings.notify:
        hook = settings.notify.get_secret_value()
        try:
            sent, line = notify.once(
                hook,
                settings,
                brief_of(report, settings, url),
                store.post(f.repo, f.start, f.end, notify.target(hook)),
            )
        except PrhubError as exc:
            posted.failed.append(exc)
        else:
            if sent is not None:
                store.save_post(f.repo, f.start, f.end, sent)
            posted.done.append(line)
    return posted
