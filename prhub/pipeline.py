"""The only module that wires stages together: summarize one PR, or a week."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import ExitStack, closing, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from prhub import analyse, retry
from prhub.config import Settings
from prhub.errors import (
    ConfigError,
    GitHubAuthError,
    GitHubUnavailable,
    LLMRequestError,
    LLMUnavailable,
    PrhubError,
    PRNotMerged,
    StoreError,
)
from prhub.llm import LLM, ContextTooLong, Prompt, load_prompt, message_tokens, schema_text
from prhub.model import (
    ChunkNotes,
    Coverage,
    DigestContent,
    DigestMeta,
    DryRun,
    FailedPR,
    PlannedPR,
    PRDigest,
    PreparedPR,
    PullRequest,
    Usage,
    WeeklyFacts,
    WeeklyMeta,
    WeeklyNarrative,
    WeeklyReport,
    parse_title,
    tag_name,
)
from prhub.prepare import BODY_BUDGET, TITLE_BUDGET, prepare, redact
from prhub.prepare.redact import is_env_file
from prhub.prepare.tokens import count, truncate
from prhub.source import GitHubSource, references
from prhub.store import Store

T = TypeVar("T")
NOTE_BUDGET = 700  # tokens of one chunk's notes in the final call of a map-reduce
MARGIN = 64  # tokens kept free for what a stub render cannot foresee (digits, joins)


@dataclass
class RunStats:
    """What a run did, for its closing summary; filled in as it goes."""

    prs: int = 0
    cached: int = 0
    failed: int = 0
    usage: Usage = field(default_factory=Usage)
    retries: retry.RetryCounter = field(default_factory=retry.RetryCounter)
    errors: list[FailedPR] = field(default_factory=list)


Progress = Callable[[str, int, int], None]  # stage, done, total


@dataclass
class _Run:
    """The services and settings of one command, handed to the steps that need them."""

    settings: Settings
    source: GitHubSource
    store: Store
    llm: LLM | None
    stats: RunStats
    tick: Progress


@contextmanager
def _run(
    settings: Settings,
    source: GitHubSource | None,
    llm: LLM | None,
    store: Store | None,
    stats: RunStats | None,
    progress: Progress | None,
    *,
    command: str,
    need_llm: bool = True,
) -> Iterator[_Run]:
    """Makes the clients not passed in, closes only those, and records the run in the store."""
    stats = stats or RunStats()
    with ExitStack() as owned:
        if need_llm and llm is None:  # first: a missing key fails before any GitHub request
            llm = owned.enter_context(closing(LLM(settings, counter=stats.retries)))
        if source is None:
            source = owned.enter_context(closing(GitHubSource(settings, counter=stats.retries)))
        if store is None:
            store = owned.enter_context(closing(Store(settings.store)))
        run_id = store.start_run(command)
        fatal: list[str] = []
        try:
            yield _Run(settings, source, store, llm, stats, progress or (lambda *_: None))
        except PrhubError as exc:
            fatal.append(str(exc))
            raise
        finally:
            with suppress(StoreError):  # a failing store must not hide what ended the run
                store.finish_run(
                    run_id,
                    tokens_in=stats.usage.tokens_in,
                    tokens_out=stats.usage.tokens_out,
                    calls=stats.usage.calls,
                    errors=[
                        *(f.model_dump() for f in stats.errors),
                        *({"error": e} for e in fatal),
                    ],
                    prs=stats.prs,
                    cached=stats.cached,
                    failed=stats.failed,
                    retries=stats.retries.count,
                )


def summarize_pr(
    number: int,
    settings: Settings,
    *,
    source: GitHubSource | None = None,
    llm: LLM | None = None,
    store: Store | None = None,
    stats: RunStats | None = None,
) -> PRDigest:
    """Fetches one PR and returns its digest, reusing one made before from the same inputs."""
    repo = settings.require_repo()
    with _run(settings, source, llm, store, stats, None, command="summarize") as run:
        pr = _merged_pr(run, repo, number)
        assert run.llm is not None
        digest, hit = cached_digest(pr, settings, run.llm, run.store)
        run.stats.prs, run.stats.cached = 1, int(hit)
        run.stats.usage = Usage() if hit else digest.meta.usage
        return digest


def dry_run_pr(
    number: int,
    settings: Settings,
    *,
    source: GitHubSource | None = None,
    store: Store | None = None,
) -> DryRun:
    """What summarizing one PR would send to the model; fetches and prepares, sends nothing."""
    repo = settings.require_repo()
    with _run(settings, source, None, store, None, None, command="dry-run", need_llm=False) as run:
        planned = _planned(run, _merged_pr(run, repo, number))
        return DryRun(
            repo=repo, prs=[planned], output_tokens_max=planned.calls * settings.output_tokens
        )


def _merged_pr(run: _Run, repo: str, number: int) -> PullRequest:
    pr = load_pr(repo, number, run.settings, run.source, run.store)
    if not pr.merged and not run.settings.allow_unmerged:
        raise PRNotMerged(
            f"{repo}#{number} is not merged: pass --allow-unmerged to digest it anyway"
        )
    return pr


def _planned(run: _Run, pr: PullRequest) -> PlannedPR:
    """The calls and prompt tokens digesting `pr` would take; none when its digest is stored."""
    settings = run.settings
    key = digest_key(pr, settings)
    if not settings.refresh and run.store.digest(key):
        return PlannedPR(number=pr.number, cached=True, calls=0, tokens_in=0)
    prepared, calls = plan(pr, settings)
    tokens = sum(message_tokens(m, settings.encoding) for m in calls)
    if len(calls) > 1:  # the final call: fixed text, the index and each chunk's notes
        final = _prompt(settings, "digest").messages(
            **_context(prepared),
            diff="",
            notes=[],
            index=prepared.index,
            schema=schema_text(settings, DigestContent),
        )
        tokens += message_tokens(final, settings.encoding) + len(calls) * NOTE_BUDGET
    return PlannedPR(
        number=pr.number, cached=False, calls=len(calls) + (len(calls) > 1), tokens_in=tokens
    )


def load_pr(
    repo: str,
    number: int,
    settings: Settings,
    source: GitHubSource,
    store: Store,
    updated_at: str | None = None,
) -> PullRequest:
    """A PR from the store when GitHub says it has not changed, else fetched, scrubbed and kept."""
    kept = None if settings.refresh else store.pull(repo, number)
    if kept and updated_at and _same_time(kept[1], updated_at):
        return kept[0]  # the search hit already told us nothing changed: no request
    payload = source.pull_payload(repo, number)
    if (
        kept
        and _same_time(kept[1], payload.get("updated_at"))
        and kept[0].version == _version(payload)
    ):
        return kept[0]
    pr = scrub(source.pull(repo, number, payload))
    store.save_pull(pr, payload.get("updated_at") or "")
    return pr


def cached_digest(
    pr: PullRequest, settings: Settings, llm: LLM, store: Store
) -> tuple[PRDigest, bool]:
    """The stored digest for exactly these inputs (and True), else a new one, stored."""
    key = digest_key(pr, settings)
    if not settings.refresh and (found := store.digest(key)):
        return found, True
    digest = digest_pr(pr, settings, llm)
    store.save_digest(digest)
    return digest, False


def scrub(pr: PullRequest) -> PullRequest:
    """The PR with secret-shaped text replaced by markers, before it is kept or shown."""
    counts: Counter[str] = Counter()

    def clean(text: str, env_file: bool = False) -> str:
        cleaned, found = redact(text, env_file=env_file)
        counts.update(found)
        return cleaned

    files = [
        f.model_copy(
            update={
                "path": clean(f.path),
                "previous_path": clean(f.previous_path) if f.previous_path else None,
                "patch": clean(f.patch, is_env_file(f.path)) if f.patch is not None else None,
            }
        )
        for f in pr.files
    ]
    update = {"title": clean(pr.title), "body": clean(pr.body), "files": files}
    return pr.model_copy(update={**update, "redactions": dict(counts + Counter(pr.redactions))})


def _same_time(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    return datetime.fromisoformat(a.replace("Z", "+00:00")) == datetime.fromisoformat(
        b.replace("Z", "+00:00")
    )


def _version(payload: dict[str, Any]) -> str:
    head = (payload.get("head") or {}).get("sha", "")
    return (payload.get("merge_commit_sha") if payload.get("merged_at") else None) or head


def budgets(pr: PullRequest, settings: Settings) -> tuple[int, int]:
    """Tokens left for one call's diff chunk and for the final call's file index."""
    prompt, notes_prompt = (
        _prompt(settings, "digest"),
        _prompt(settings, "digest_notes"),
    )
    schema, notes_schema = schema_text(settings, DigestContent), schema_text(settings, ChunkNotes)
    fixed = max(
        _tokens(prompt, settings, _stub(pr), diff="", notes=[], index="", schema=schema),
        _tokens(notes_prompt, settings, _stub(pr), diff="", part=9, parts=9, schema=notes_schema),
    )
    chunk_budget = settings.input_budget - fixed - TITLE_BUDGET - BODY_BUDGET - MARGIN
    index_budget = chunk_budget - settings.max_calls * NOTE_BUDGET
    if index_budget < 500:
        raise ConfigError(
            f"input budget {settings.input_budget} is too small for a digest prompt: "
            f"raise --input-budget to at least {settings.input_budget - index_budget + 500}"
        )
    return chunk_budget, index_budget


def plan(pr: PullRequest, settings: Settings) -> tuple[PreparedPR, list[list[dict[str, str]]]]:
    """The PR prepared within budget, and the messages of its first calls: one, or one a chunk."""
    chunk_budget, index_budget = budgets(pr, settings)
    prepared = prepare(pr, settings, chunk_budget=chunk_budget, index_budget=index_budget)
    if len(prepared.chunks) == 1:
        prompt = _prompt(settings, "digest")
        schema = schema_text(settings, DigestContent)
        first = prompt.messages(
            **_context(prepared), diff=prepared.chunks[0], notes=[], index="", schema=schema
        )
        return prepared, [first]
    notes_prompt = _prompt(settings, "digest_notes")
    schema = schema_text(settings, ChunkNotes)
    return prepared, [
        notes_prompt.messages(
            **_context(prepared), diff=chunk, part=i, parts=len(prepared.chunks), schema=schema
        )
        for i, chunk in enumerate(prepared.chunks, 1)
    ]


def digest_pr(pr: PullRequest, settings: Settings, llm: LLM) -> PRDigest:
    """Digests a PR; re-planned once within a smaller budget if the endpoint says it overflows."""
    try:
        return _digest_pr(pr, settings, llm)
    except ContextTooLong as exc:
        smaller = exc.smaller_budget(settings.input_budget)
        if smaller is None:
            raise
        try:
            digest = _digest_pr(pr, settings.model_copy(update={"input_budget": smaller}), llm)
        except ConfigError:  # the context the endpoint reported cannot hold any digest prompt
            raise exc from None
    # Keyed by the settings asked for, or the next run would not find it.
    key = digest_key(pr, settings)
    return digest.model_copy(update={"meta": digest.meta.model_copy(update={"cache_key": key})})


def _digest_pr(pr: PullRequest, settings: Settings, llm: LLM) -> PRDigest:
    """Prepares a PR within the token budget and asks the model for its digest."""
    prompt, notes_prompt = (
        _prompt(settings, "digest"),
        _prompt(settings, "digest_notes"),
    )
    prepared, calls = plan(pr, settings)
    if len(calls) == 1:
        content, usage = llm.complete(calls[0], DigestContent)
    else:
        # Map: notes per chunk, concurrently; reduce: the digest from the notes and the index.
        with ThreadPoolExecutor(max_workers=len(calls)) as pool:
            results = list(pool.map(lambda m: llm.complete(m, ChunkNotes), calls))
        notes = [_trim_notes(note, settings) for note, _ in results]
        schema = schema_text(settings, DigestContent)
        messages = prompt.messages(
            **_context(prepared), diff="", notes=notes, index=prepared.index, schema=schema
        )
        content, usage = llm.complete(messages, DigestContent)
        usage = sum((u for _, u in results), usage)

    content, dropped = _ground(content, pr)
    modules, kind, breaking = parse_title(pr.title)
    return PRDigest(
        repo=pr.repo,
        number=pr.number,
        url=pr.url,
        original_title=prepared.title,
        author=pr.author,
        merged_at=pr.merged_at,
        labels=pr.labels,
        modules=modules,
        kind=kind,
        breaking=breaking,
        additions=pr.additions,
        deletions=pr.deletions,
        changed_files=pr.changed_files or len(pr.files),
        content=content,
        meta=DigestMeta(
            prompt=prompt.id if len(prepared.chunks) == 1 else f"{prompt.id}+{notes_prompt.id}",
            model=settings.model,
            usage=usage,
            coverage=prepared.coverage.model_copy(
                update={"unlisted": max(0, pr.changed_files - len(pr.files))}
            ),
            redactions=dict(Counter(pr.redactions) + Counter(prepared.redactions)),
            dropped_citations=dropped,
            cache_key=digest_key(pr, settings),
            created_at=datetime.now(UTC),
        ),
    )


def digest_key(pr: PullRequest, settings: Settings) -> str:
    """Names every input that changes a digest: PR content, prompts, model, prepare settings."""
    prompts = [_prompt(settings, "digest"), _prompt(settings, "digest_notes")]
    parts = [
        pr.repo,
        str(pr.number),
        pr.version,
        *(f"{p.id}:{p.fingerprint}" for p in prompts),
        settings.model,
        settings.response_mode,
        settings.prepare_key(),
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


def _retag(digest: PRDigest, settings: Settings) -> PRDigest:
    """The digest's modules and labels in the repository's own tag spellings."""
    if not settings.tags:
        return digest
    modules = list(dict.fromkeys(tag_name(m, settings.tags) for m in digest.modules))
    labels = list(dict.fromkeys(tag_name(x, settings.tags) for x in digest.labels))
    return digest.model_copy(update={"modules": modules, "labels": labels})


def _prompt(settings: Settings, task: str) -> Prompt:
    """The latest version of a task's prompt, the user's --prompt-dir first."""
    return load_prompt(task, prompt_dir=settings.prompt_dir)


def _stub(pr: PullRequest) -> PreparedPR:
    """The PR's prompt metadata without its title, body and diff, to measure the fixed cost."""
    return PreparedPR(
        repo=pr.repo,
        number=pr.number,
        title="",
        body="",
        author=pr.author,
        labels=pr.labels,
        base_ref=pr.base_ref,
        head_ref=pr.head_ref,
        additions=pr.additions,
        deletions=pr.deletions,
        reviews=pr.reviews,
        referenced_issues=pr.referenced_issues,
        files=[],
        chunks=[""],
        index="",
        coverage=Coverage(full=[f.path for f in pr.files]),
    )


def _context(prepared: PreparedPR) -> dict[str, Any]:
    states = Counter(review.state for review in prepared.reviews)
    return {"pr": prepared, "review_states": sorted(states.items())}


def _tokens(prompt: Prompt, settings: Settings, stub: PreparedPR, **variables: Any) -> int:
    return message_tokens(prompt.messages(**_context(stub), **variables), settings.encoding)


def _trim_notes(note: ChunkNotes, settings: Settings) -> ChunkNotes:
    """Notes cut to their share of the final prompt (NOTE_BUDGET tokens with the labels)."""
    enc = settings.encoding
    return ChunkNotes(
        summary=truncate(note.summary, 250, enc),
        key_files=[truncate(f, 30, enc) for f in note.key_files[:5]],
        identifiers=[truncate(i, 10, enc) for i in note.identifiers[:8]],
        risks=[truncate(r, 35, enc) for r in note.risks[:3]],
    )


_SPAN = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.\w{1,8})(?![\w/])")
_NUMBER = re.compile(r"#(\d+)")


def _ground(content: DigestContent, pr: PullRequest) -> tuple[DigestContent, int]:
    """Drops what the digest cites that its input never had: PR numbers, paths, identifiers.

    A list item citing something unknown goes; in the advice the span loses its code marks.
    Returns the digest and how many citations were dropped.
    """
    source = "\n".join(
        [pr.title, pr.body, *(f.path for f in pr.files), *(f.previous_path or "" for f in pr.files)]
        + [f.patch or "" for f in pr.files]
    )
    known_numbers = {*pr.referenced_issues, *references(f"{pr.title}\n{pr.body}"), pr.number}
    dropped = 0

    def unknown(text: str) -> list[str]:
        cited = [*_SPAN.findall(text), *_PATH.findall(_SPAN.sub("", text))]
        numbers = [int(n) for n in _NUMBER.findall(text)]
        return [c for c in cited if c.strip() not in source] + [
            f"#{n}" for n in numbers if n not in known_numbers
        ]

    def keep(items: list[str]) -> list[str]:
        nonlocal dropped
        kept = [item for item in items if not unknown(item)]
        dropped += len(items) - len(kept)
        return kept

    def unmark(text: str) -> str:
        nonlocal dropped

        def span(match: re.Match[str]) -> str:
            nonlocal dropped
            if match.group(1).strip() in source:
                return match.group(0)
            dropped += 1
            return match.group(1)

        def number(match: re.Match[str]) -> str:
            nonlocal dropped
            if int(match.group(1)) in known_numbers:
                return match.group(0)
            dropped += 1
            return ""

        return _NUMBER.sub(number, _SPAN.sub(span, text))

    related = [n for n in dict.fromkeys(content.related_prs) if n in known_numbers - {pr.number}]
    dropped += len(content.related_prs) - len(related)
    grounded = content.model_copy(
        update={
            "title": unmark(content.title),
            "advice": unmark(content.advice),
            "importance_reason": unmark(content.importance_reason),
            "design_decisions": keep(content.design_decisions),
            "risks": keep(content.risks),
            "follow_ups": keep(content.follow_ups),
            "related_prs": related,
        }
    )
    return grounded, dropped


# Errors that would fail every PR alike: stop the run instead of listing each PR as failed.
_FATAL = (ConfigError, GitHubAuthError, StoreError)
_DOWN = 3  # this many PRs failing for an unreachable service, and none succeeding: stop
DIGEST_LINE_TOKENS = 220  # one PR's line in the weekly prompt


def window(
    settings: Settings,
    *,
    year: int | None = None,
    week: int | None = None,
    since: str | None = None,
    until: str | None = None,
    now: datetime | None = None,
) -> tuple[datetime, datetime, int, int | None]:
    """The [start, end) window a weekly run covers, with its year and ISO week (None for dates)."""
    tz = ZoneInfo(settings.tz)
    now = now or datetime.now(UTC)
    if since or until:
        if week is not None:
            raise ConfigError("give either --week or --since/--until, not both")
        start = _moment(since, tz, "--since") if since else None
        end = _moment(until, tz, "--until", end_of_day=True) if until else now
        if start is None:
            raise ConfigError("--until needs --since too")
        if end <= start:
            raise ConfigError(f"--until ({until}) must come after --since ({since})")
        return start, end, start.astimezone(tz).year, None
    if week is None:
        if year is not None:
            raise ConfigError("--year needs --week (without both: the last complete week)")
        year, week = analyse.last_complete_week(now, settings.tz)
    if year is None:
        year = now.astimezone(tz).isocalendar().year  # the ISO year: 2027-01-02 is in 2026-W53
    start, end = analyse.week_window(year, week, settings.tz)
    if start > now:
        raise ConfigError(f"week {week} of {year} has not started yet ({settings.tz})")
    return start, end, year, week


def _moment(text: str, tz: ZoneInfo, flag: str, end_of_day: bool = False) -> datetime:
    """A date (whole day, local) or an ISO datetime (naive means local) from a flag."""
    try:
        if len(text) == 10:
            day = datetime.fromisoformat(text).replace(tzinfo=tz)
            return day + timedelta(days=1) if end_of_day else day
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"{flag} {text!r} is not a date: use YYYY-MM-DD or an ISO time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=tz)


def weekly(
    settings: Settings,
    *,
    year: int | None = None,
    week: int | None = None,
    since: str | None = None,
    until: str | None = None,
    now: datetime | None = None,
    source: GitHubSource | None = None,
    llm: LLM | None = None,
    store: Store | None = None,
    narrate: bool = True,
    stats: RunStats | None = None,
    progress: Progress | None = None,
) -> WeeklyReport:
    """Digests every PR merged in the window, computes the week's facts, writes the narrative."""
    repo = settings.require_repo()
    start, end, year, week = window(
        settings, year=year, week=week, since=since, until=until, now=now
    )
    command = "weekly" if narrate else "labels"
    with _run(settings, source, llm, store, stats, progress, command=command) as run:
        assert run.llm is not None
        failed: list[FailedPR] = []
        fetched = _fetch_window(run, repo, start, end, failed)
        # Biggest first: a PR that needs several calls should not be the last one started.
        order = sorted(fetched, key=lambda n: -(fetched[n].additions + fetched[n].deletions))
        llm_ = run.llm
        made = _each(
            order,
            lambda n, pr: cached_digest(pr, settings, llm_, run.store),
            fetched,
            settings,
            failed,
            lambda done: run.tick("summarize", done, len(order)),
        )
        digests = {n: _retag(digest, settings) for n, (digest, _) in made.items()}
        cached = sum(hit for _, hit in made.values())
        usage = sum((d.meta.usage for d, hit in made.values() if not hit), Usage())
        facts = analyse.weekly_facts(
            [fetched[n] for n in sorted(fetched)],  # a PR whose digest failed still counts
            digests,
            repo=repo,
            start=start,
            end=end,
            tz=settings.tz,
            year=year,
            week=week,
            aliases=settings.tags,
        )
        prompt = _prompt(settings, "weekly")
        narrative, dropped = None, 0
        if narrate and digests:
            ordered = [digests[n] for n in sorted(digests)]
            key = _narrative_key(facts, ordered, prompt, settings)
            kept = None if settings.refresh else run.store.narrative(key)
            if kept is None:
                narrative, call_usage = _narrate(facts, ordered, settings, llm_)
                usage += call_usage
                narrative, dropped = _ground_weekly(narrative, facts)
                run.store.save_narrative(key, narrative, dropped)
            else:
                narrative, dropped = kept
        run.stats.prs = len(digests) + len(failed)
        run.stats.cached, run.stats.failed, run.stats.usage = cached, len(failed), usage
        run.stats.errors = failed
        report = WeeklyReport(
            facts=facts,
            narrative=narrative,
            digests=[digests[n] for n in sorted(digests)],
            failed=sorted(failed, key=lambda f: f.number),
            meta=WeeklyMeta(
                prompt=prompt.id,
                model=settings.model,
                usage=usage,
                cached_digests=cached,
                dropped_citations=dropped,
                generated_at=datetime.now(UTC),
            ),
        )
        if narrate:
            run.store.save_report(report)
        return report


def dry_run_week(
    settings: Settings,
    *,
    year: int | None = None,
    week: int | None = None,
    since: str | None = None,
    until: str | None = None,
    now: datetime | None = None,
    source: GitHubSource | None = None,
    store: Store | None = None,
    progress: Progress | None = None,
) -> DryRun:
    """What a weekly run would send to the model; fetches and prepares, sends nothing."""
    repo = settings.require_repo()
    start, end, year, week = window(
        settings, year=year, week=week, since=since, until=until, now=now
    )
    with _run(
        settings, source, None, store, None, progress, command="dry-run", need_llm=False
    ) as run:
        fetched = _fetch_window(run, repo, start, end, [])
        planned = [_planned(run, fetched[n]) for n in sorted(fetched)]
        calls, tokens = 0, 0
        if planned:
            stub = WeeklyFacts(
                repo=repo,
                year=year,
                week=week,
                start=start,
                end=end,
                tz=settings.tz,
                prs=sorted(fetched),
                pr_count=len(fetched),
            )
            # Digests are not written yet: count each PR's line at its full share.
            lines = ["#0 " + "字" * DIGEST_LINE_TOKENS] * len(planned)
            messages = _prompt(settings, "weekly").messages(
                facts=stub,
                period="",
                digests=lines,
                partials=[],
                schema=schema_text(settings, WeeklyNarrative),
            )
            tokens = message_tokens(messages, settings.encoding)
            groups = -(-tokens // settings.input_budget)
            calls = 1 if groups == 1 else groups + 1
        return DryRun(
            repo=repo,
            prs=planned,
            narrative_calls=calls,
            narrative_tokens_in=tokens,
            output_tokens_max=(sum(p.calls for p in planned) + calls) * settings.output_tokens,
        )


def _fetch_window(
    run: _Run, repo: str, start: datetime, end: datetime, failed: list[FailedPR]
) -> dict[int, PullRequest]:
    """Every PR merged in the window, from the store when unchanged, else from GitHub."""
    hits = {h["number"]: h for h in run.source.merged_between(repo, start, end)}
    return _each(
        sorted(hits),
        lambda n, hit: load_pr(repo, n, run.settings, run.source, run.store, hit.get("updated_at")),
        hits,
        run.settings,
        failed,
        lambda done: run.tick("fetch", done, len(hits)),
    )


def _each(
    numbers: list[int],
    work: Callable[[int, Any], T],
    inputs: dict[int, Any],
    settings: Settings,
    failed: list[FailedPR],
    tick: Callable[[int], None],
) -> dict[int, T]:
    """Runs work per PR on settings.jobs threads; a PR's own failure is recorded, not raised."""
    results: dict[int, T] = {}
    down = 0  # PRs lost to a service that kept failing, before any PR went through
    tick(0)
    with ThreadPoolExecutor(max_workers=settings.jobs) as pool:
        futures = {pool.submit(work, n, inputs[n]): n for n in numbers}
        for done, future in enumerate(as_completed(futures), 1):
            try:
                results[futures[future]] = future.result()
            except PrhubError as exc:
                down += isinstance(exc, LLMUnavailable | GitHubUnavailable)
                if (
                    isinstance(exc, _FATAL)
                    or (isinstance(exc, LLMRequestError) and not isinstance(exc, ContextTooLong))
                    or (down >= _DOWN and not results)  # the service is down, not one PR
                ):
                    pool.shutdown(cancel_futures=True)  # it would fail every PR alike
                    raise
                failed.append(FailedPR(number=futures[future], error=str(exc)))
            tick(done)
    return results


def _narrative_key(
    facts: WeeklyFacts, digests: list[PRDigest], prompt: Prompt, settings: Settings
) -> str:
    """Names every input of a week's narrative: its facts, its digests, prompt and model."""
    parts = [
        facts.model_dump_json(),
        *(d.meta.cache_key for d in digests),
        f"{prompt.id}:{prompt.fingerprint}",
        settings.model,
        settings.response_mode,
        str(settings.input_budget),
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


def digest_line(d: PRDigest, settings: Settings) -> str:
    """One PR as the weekly prompt sees it."""
    c = d.content
    tags = ", ".join(d.tags)
    parts = [
        f"#{d.number} [{tags}] {c.title}",
        f"{c.verdict}，重要性 {c.importance:.1f}：{c.importance_reason}",
    ]
    if c.risks:
        parts.append("风险：" + "；".join(c.risks[:2]))
    return truncate(" | ".join(parts), DIGEST_LINE_TOKENS, settings.encoding)


def _narrate(
    facts: WeeklyFacts, digests: list[PRDigest], settings: Settings, llm: LLM
) -> tuple[WeeklyNarrative, Usage]:
    """One call when the week's digests fit the budget, else one per group and a final one."""
    prompt = _prompt(settings, "weekly")
    schema = schema_text(settings, WeeklyNarrative)
    period = (
        f"{facts.start:%Y-%m-%d %H:%M} 至 {facts.end:%Y-%m-%d %H:%M}（{facts.tz}，不含结束时刻）"
    )
    lines = [digest_line(d, settings) for d in digests]

    def messages(lines: list[str], partials: list[str]) -> list[dict[str, str]]:
        return prompt.messages(
            facts=facts, period=period, digests=lines, partials=partials, schema=schema
        )

    fixed = count("\n".join(m["content"] for m in messages([], [])), settings.encoding) + MARGIN
    room = settings.input_budget - fixed
    sizes = [count(line, settings.encoding) + 2 for line in lines]
    if sum(sizes) <= room:
        return llm.complete(messages(lines, []), WeeklyNarrative)

    groups: list[list[str]] = [[]]
    used = 0
    for line, size in zip(lines, sizes, strict=True):
        if groups[-1] and used + size > room:
            groups.append([])
            used = 0
        groups[-1].append(line)
        used += size
    with ThreadPoolExecutor(max_workers=min(len(groups), settings.jobs)) as pool:
        drafts = list(pool.map(lambda g: llm.complete(messages(g, []), WeeklyNarrative), groups))
    usage = sum((u for _, u in drafts), Usage())
    share = max(200, (room // 2) // len(drafts))
    partials = [truncate(_draft_text(n), share, settings.encoding) for n, _ in drafts]
    short = [line.split(" | ")[0] for line in lines]
    while short and count("\n".join(short + partials), settings.encoding) > room:
        short = short[: len(short) * 3 // 4]  # keep the titles that fit, most important first
    narrative, final = llm.complete(messages(short, partials), WeeklyNarrative)
    return narrative, usage + final


def _draft_text(n: WeeklyNarrative) -> str:
    return "\n".join(
        [n.summary, *n.highlights, *n.key_changes, *n.risks]
        + [f"{t.theme}：{t.judgement}" for t in n.trends]
    )


_COUNTED = re.compile(r"(\d+)(\s*个\s*(?:PR|pr|合并请求))")


def _fact_counts(facts: WeeklyFacts) -> set[int]:
    """Every PR count the week's facts hold: the only ones a narrative may state."""
    sizes = [len(facts.key_prs), len(facts.untested), len(facts.reverts), len(facts.breaking)]
    return {
        facts.pr_count,
        *sizes,
        *facts.tags.values(),
        *(len(a.prs) for a in [*facts.authors, *facts.first_time]),
        *(len(h.prs) for h in [*facts.hot_files, *facts.hot_dirs]),
    }


def _ground_weekly(n: WeeklyNarrative, facts: WeeklyFacts) -> tuple[WeeklyNarrative, int]:
    """Removes citations of PRs not in the week and PR counts the facts do not hold.

    Returns the narrative and how many citations and figures went.
    """
    week, figures = set(facts.prs), _fact_counts(facts)
    dropped = 0

    def clean(text: str) -> str:
        nonlocal dropped

        def keep(match: re.Match[str]) -> str:
            nonlocal dropped
            if int(match.group(1)) in week:
                return match.group(0)
            dropped += 1
            return ""

        def counted(match: re.Match[str]) -> str:
            nonlocal dropped
            if int(match.group(1)) in figures:
                return match.group(0)
            dropped += 1
            return "多" + match.group(2).lstrip()  # a count no fact backs: say "several"

        text = _COUNTED.sub(counted, _NUMBER.sub(keep, text))
        return re.sub(r"[（(]\s*[）)]", "", text).strip()

    def numbers(values: list[int]) -> list[int]:
        nonlocal dropped
        kept = [v for v in values if v in week]
        dropped += len(values) - len(kept)
        return kept

    dropped += sum(k.number not in week for k in n.key_prs)
    grounded = WeeklyNarrative(
        summary=clean(n.summary),
        highlights=[clean(x) for x in n.highlights],
        key_changes=[clean(x) for x in n.key_changes],
        trends=[
            t.model_copy(
                update={
                    "theme": clean(t.theme),
                    "prs": numbers(t.prs),
                    "judgement": clean(t.judgement),
                }
            )
            for t in n.trends
        ],
        risks=[clean(x) for x in n.risks],
        key_prs=[
            k.model_copy(update={"topic": clean(k.topic), "note": clean(k.note)})
            for k in n.key_prs
            if k.number in week
        ],
        follow_ups=[clean(x) for x in n.follow_ups],
    )
    return grounded, dropped
