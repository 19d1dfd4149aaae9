"""What a run tells a digest of its neighbours: the PRs it references or reverts (fetched once
and stored, revalidated after) and the PRs of its period that changed the same files, each with
its stored digest's title and verdict; and what each revert of a week undoes."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from prhub import paths
from prhub.config import named_zone
from prhub.digest.claims import MAINTAINERS
from prhub.digest.related import MOST, ranked
from prhub.errors import PrhubError, PRNotFound
from prhub.github.commits import commit_pulls
from prhub.github.source import GITHUB_IN_FLIGHT
from prhub.model import Neighbour, PullRequest
from prhub.model.pr import Relation
from prhub.prepare.facts import REVERT_COMMIT, revert_target
from prhub.run.fanout import FATAL, each
from prhub.run.run import Run
from prhub.text import refs
from prhub.weekly.analyse import week_window

log = logging.getLogger("prhub")
# GitHub's closing keywords: what follows them is an issue the PR closes, not a PR to fetch.
CLOSES = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s*$", re.I)

Found = dict[int, PullRequest | None]  # PRs looked up by number; None: no PR by that number


def referenced(pr: PullRequest) -> list[int]:
    """The PRs (and issues) of its own repository `pr` refers to, in order: in its title and
    body, and in what its author and the maintainers said in its discussion; not the issues
    it closes ("Fixes #95"), which are no PRs."""
    said = [pr.title, pr.body]
    said += [c.body for c in pr.discussion if c.association in MAINTAINERS or c.author == pr.author]
    text = "\n".join(said)
    found = refs(text, pr.repo)
    issues = set(refs(text, pr.repo, after=CLOSES))
    return [n for n in found if n != pr.number and n not in issues]


def revert_candidate(run: Run, pr: PullRequest, period: Mapping[int, PullRequest]) -> int | None:
    """The PR `pr` reverts, when it is a revert: as its title or body names it, else the PR of
    the commit its body names (one of the period's, else as GitHub associates it), else the
    one PR its body cites; None when none is told."""
    is_revert, target = revert_target(pr, run.repo())
    if not is_revert or target is not None:
        return target
    for sha in filter(None, REVERT_COMMIT.findall(pr.body)):
        owners = [
            n
            for n, p in period.items()
            if n != pr.number and (p.merge_commit_sha or "").lower().startswith(sha.lower())
        ]
        if not owners:
            try:
                owners = [n for n in commit_pulls(run.source, run.repo(), sha) if n != pr.number]
            except FATAL:
                raise
            except PrhubError as exc:  # the revert stays unresolved; the run goes on
                log.warning("the commit #%d reverts was not looked up (%s)", pr.number, exc)
        if len(owners) == 1:
            return owners[0]
    cited = [n for n in refs(pr.body, run.repo()) if n != pr.number]
    return cited[0] if len(cited) == 1 else None


def looked_up(run: Run, numbers: Iterable[int], period: Mapping[int, PullRequest]) -> Found:
    """The PRs `numbers` name: the period's as fetched, others from the store or GitHub (with
    conditional requests), a few at a time; None for a number that is no PR (an issue) or that
    GitHub could not give now."""
    wanted = {n: None for n in numbers if n not in period}
    found: Found = {n: period[n] for n in numbers if n in period}

    def load(number: int, _: None) -> PullRequest | None:
        try:
            return run.load_pr(number)
        except PRNotFound:
            return None  # an issue: GitHub has no pull by its number

    got, failed = each(wanted, load, min(run.settings.jobs, GITHUB_IN_FLIGHT))
    for f in failed:
        log.warning("related PR #%d was not fetched (%s)", f.number, f.error)
    return {**found, **{n: got.get(n) for n in wanted}}


def neighbours(
    run: Run,
    pr: PullRequest,
    period: Mapping[int, PullRequest],
    found: Found,
    reverted: int | None,
) -> list[Neighbour]:
    """The PRs `pr`'s digest request names: the one it reverts, the ones it references, the
    period's that changed the same files, each once, within the request's bound."""
    out: list[Neighbour] = []
    week = (merged_week(run, pr) or (None, None))[0]
    if reverted is not None and (other := found.get(reverted)) is not None:
        out.append(_neighbour(run, other, "reverted", week))
    for n in referenced(pr)[:MOST]:
        if (other := found.get(n)) is not None:
            out.append(_neighbour(run, other, "referenced", week))
    mine = _read_files(pr)
    shared = []
    for n, other in period.items():
        both = sorted(mine & _read_files(other))
        if n != pr.number and both:
            shared.append((-len(both), n, both))
    for _, n, both in sorted(shared)[:MOST]:
        out.append(_neighbour(run, period[n], "same_files", week, both))
    return ranked(out, pr.number)


def merged_week(run: Run, pr: PullRequest) -> tuple[datetime, datetime] | None:
    """The ISO week `pr` was merged in, in the run's timezone: its Monday and the next."""
    if pr.merged_at is None:
        return None
    iso = pr.merged_at.astimezone(named_zone(run.settings.tz)).isocalendar()
    return week_window(iso.year, iso.week, run.settings.tz)


def _neighbour(
    run: Run,
    other: PullRequest,
    relation: Relation,
    week: datetime | None,
    files: Sequence[str] = (),
) -> Neighbour:
    """A neighbour as the request names it. A PR merged before the digested PR's week carries
    its stored digest's title and verdict; one of that week (or after) does not: its digest
    may be made in the same run, and a request must not change with the order digests are
    made in (a batch would never settle, a rerun would miss the store), nor with the command
    (summarize and weekly share a digest)."""
    earlier = week is not None and other.merged_at is not None and other.merged_at < week
    made = run.store.latest_digest(other.repo, other.number) if earlier else None
    return Neighbour(
        number=other.number,
        title=other.title,
        merged_at=other.merged_at,
        relation=relation,
        files=list(files),
        digest_title=made.content.title if made else "",
        verdict=made.content.verdict if made else "",
    )


def _read_files(pr: PullRequest) -> set[str]:
    """The files of `pr` a reader reads: not lock, vendored or generated ones."""
    return {f.path for f in pr.files if not paths.is_machine_made(f)}


def week_neighbours(
    run: Run, period: Mapping[int, PullRequest]
) -> tuple[dict[int, list[Neighbour]], dict[int, PullRequest]]:
    """Each PR's neighbours in a period, and each revert's target PR (for its facts)."""
    reverts = {n: t for n, pr in period.items() if (t := revert_candidate(run, pr, period))}
    wanted = [*reverts.values(), *(n for pr in period.values() for n in referenced(pr)[:MOST])]
    found = looked_up(run, dict.fromkeys(wanted), period)
    near = {n: neighbours(run, pr, period, found, reverts.get(n)) for n, pr in period.items()}
    targets = {n: got for n, target in reverts.items() if (got := found.get(target)) is not None}
    return near, targets


def pr_neighbours(run: Run, pr: PullRequest) -> list[Neighbour]:
    """One PR's neighbours: its period is the ISO week it was merged in, as far as a stored
    report of that week lists its PRs and the store holds them (nothing is fetched for it)."""
    period: dict[int, PullRequest] = {pr.number: pr}
    if (bounds := merged_week(run, pr)) is not None:
        report = run.store.report(run.repo(), *bounds)
        for n in report.facts.prs if report else []:
            if n != pr.number and (stored := run.store.pull(run.repo(), n)) is not None:
                period[n] = stored.pr
    target = revert_candidate(run, pr, period)
    wanted = [*([target] if target else []), *referenced(pr)[:MOST]]
    found = looked_up(run, dict.fromkeys(wanted), period)
    return neighbours(run, pr, period, found, target)
