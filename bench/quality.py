"""Digest quality against the configured LLM endpoint: one row per corpus PR, and a total.

GitHub is the corpus replayed by the loopback stand-in and the store a fresh temporary file, so
every PR is digested; the endpoint, model and budgets come from the environment as for prhub
itself (OPENAI_BASE_URL, OPENAI_API_KEY, PRHUB_MODEL, PRHUB_RESPONSE_MODE, PRHUB_INPUT_BUDGET,
PRHUB_OUTPUT_TOKENS, PRHUB_TIMEOUT, PRHUB_MAX_ATTEMPTS, ...). The table is sorted by PR and holds
no timestamps, so two runs diff line by line; timings have their own column. Usage:

    python bench/quality.py [CORPUS_DIR] [--prs 7227,7224] [--smallest] [--limit N] [--json PATH]

Columns: files and lines changed; calls planned, made (usage.calls), HTTP requests sent and
refused (status >= 400, e.g. a response_format the server does not take); 1st: valid without a
corrective call (calls == planned); fix: corrective calls, of them rej: replies rejected by
validation, chk: content checks failed; zh: Chinese title (prhub.digest.checks.chinese); tlen: title
length in 字 as checks.TITLE_RULE counts them; cite: code spans and paths cited that are in the
PR, bad: paths cited that are not, drop: citations grounding dropped; ph: texts that hold an
example placeholder, echo the wording of the example or of a corrective call, or say nothing;
verdict, importance, minutes; tokens in/out (failed PRs: what their calls cost); seconds; failed
checks, or the error.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time
import traceback
import unicodedata
from collections import Counter
from collections.abc import Iterable
from contextlib import ExitStack, closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.standins import TOKEN, standin  # noqa: E402
from prhub.config import Settings  # noqa: E402
from prhub.configfile import load_settings  # noqa: E402
from prhub.digest import checks  # noqa: E402
from prhub.digest.claims import PATH, SPAN, pr_source  # noqa: E402
from prhub.errors import PrhubError  # noqa: E402
from prhub.fields import PLACEHOLDERS  # noqa: E402
from prhub.llm.llm import LLM  # noqa: E402
from prhub.llm.reply import example, strings  # noqa: E402
from prhub.logmask import shown_url  # noqa: E402
from prhub.model import DigestContent, PRDigest, PullRequest, Usage  # noqa: E402
from prhub.run import dryrun, week  # noqa: E402
from prhub.run.run import Run  # noqa: E402

# An angle-bracketed note in Chinese, as the prompt's example reply writes its placeholders.
_NOTE = re.compile(r"<[^<>\n]*[\u3400-\u9fff][^<>\n]*>")
_CJK = re.compile(r"[\u3400-\u9fff]")
# (header, width, right-aligned); the last column is free text.
COLUMNS = [
    ("PR", 6, True),
    ("files", 5, True),
    ("lines", 6, True),
    ("plan", 4, True),
    ("calls", 5, True),
    ("req", 3, True),
    ("refus", 5, True),
    ("1st", 3, False),
    ("fix", 3, True),
    ("rej", 3, True),
    ("chk", 3, True),
    ("zh", 2, False),
    ("tlen", 4, True),
    ("cite", 4, True),
    ("bad", 3, True),
    ("drop", 4, True),
    ("ph", 2, True),
    ("verdict", 8, False),
    ("imp", 4, True),
    ("min", 3, True),
    ("tok_in", 7, True),
    ("tok_out", 7, True),
    ("secs", 7, True),
    ("checks / error", 0, False),
]


@dataclass
class Row:
    """What one PR's digest (or failure) measured."""

    number: int
    files: int = 0
    lines: int = 0
    planned: int | None = None
    calls: int | None = None
    requests: int | None = None
    refused: int | None = None
    rejected: int = 0  # replies that failed validation (prhub.llm.llm logs each)
    rechecked: int = 0  # corrective calls for failed content checks (prhub.digest.digest logs each)
    title: str = ""
    original_title: str = ""
    chinese: bool | None = None
    cited: int = 0
    bad: int = 0
    dropped: int = 0
    placeholders: list[str] = field(default_factory=list)
    verdict: str = ""
    importance: float | None = None
    minutes: int | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    failed_checks: list[str] = field(default_factory=list)
    error: str = ""  # "ErrorClass (exit N)" or "BUG ErrorClass"
    message: str = ""  # the error's message
    log: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def fixes(self) -> int | None:
        if self.calls is None or self.planned is None:
            return None
        return self.calls - self.planned

    @property
    def first_try(self) -> bool | None:
        return None if self.fixes is None or self.error else self.fixes == 0


class Records(logging.Handler):
    """Keeps prhub's log records, so each PR's retries and corrections can be counted."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


class Requests:
    """Counts the LLM client's HTTP requests and its refused answers (status >= 400)."""

    def __init__(self) -> None:
        self.sent = 0
        self.refused = 0
        self.attached = False

    def attach(self, llm: LLM) -> None:
        # The openai SDK keeps its httpx client private; without it the columns show "-".
        http = getattr(llm.client, "_client", None)
        hooks = getattr(http, "event_hooks", None)
        if not isinstance(hooks, dict):
            return
        # Ours first: prhub's own hook raises on a malformed answer, which still counts.
        http.event_hooks = {  # type: ignore[union-attr]
            "request": [self._request, *hooks.get("request", [])],
            "response": [self._response, *hooks.get("response", [])],
        }
        self.attached = True

    def _request(self, request: Any) -> None:
        self.sent += 1

    def _response(self, response: Any) -> None:
        if response.status_code >= 400:
            self.refused += 1


def corpus_prs(corpus: Path, repo: str) -> dict[int, dict[str, Any]]:
    """Every PR of `repo` in the corpus: number -> its pulls/N.json payload."""
    pulls = corpus / repo / "pulls"
    return {
        int(p.stem): json.loads(p.read_text(encoding="utf-8"))
        for p in pulls.glob("*.json")
        if p.stem.isdigit()
    }


def texts(content: DigestContent) -> list[str]:
    """Every text a digest publishes."""
    return [
        content.title,
        content.advice,
        content.importance_reason,
        *content.design_decisions,
        *content.risks,
        *content.follow_ups,
    ]


def citations(content: DigestContent, pr: PullRequest) -> tuple[int, int]:
    """Code spans and paths the digest cites that are in the PR, and paths that are not.

    Grounding drops unknown spans and list items; a bare path in running text stays.
    """
    source, cited, bad = pr_source(pr), 0, 0
    for text in texts(content):
        for span in SPAN.findall(text):
            cited += span.strip() in source
        for path in PATH.findall(SPAN.sub("", text)):
            if path.strip() in source:
                cited += 1
            else:
                bad += 1
    return cited, bad


def placeholders(content: DigestContent) -> list[str]:
    """Texts that hold the example's placeholder, echo the wording of the example or of a
    corrective call instead of writing their own, or say nothing ("无", "N/A")."""
    found = []
    for text in texts(content):
        stripped = text.strip().rstrip("。.").lower()
        if stripped in PLACEHOLDERS or _NOTE.search(text) or any(e in text for e in ECHOES):
            found.append(text)
    return found


def _echoes() -> frozenset[str]:
    """Clauses of five or more Chinese characters from the example reply's notes and from
    the corrective call's messages: a model that repeats one copied it."""
    notes = [s.strip("<>") for s in strings(example(DigestContent)) if s.startswith("<")]
    clauses = (
        c.strip()
        for text in [*notes, *checks.MESSAGES.values()]
        for c in re.split(r"[，。、：；,.:;（）()]+", text)
    )
    return frozenset(c for c in clauses if len(_CJK.findall(c)) >= 5)


def _lines(payload: dict[str, Any]) -> int:
    return int(payload.get("additions") or 0) + int(payload.get("deletions") or 0)


ECHOES = _echoes()


def measure(
    run: Run, number: int, payload: dict[str, Any], counts: Requests, logs: Records
) -> tuple[Row, PRDigest | None]:
    """One PR through the run's summarize, and what its digest shows."""
    row = Row(
        number=number,
        files=int(payload.get("changed_files") or 0),
        lines=_lines(payload),
    )
    sent, refused, logged = counts.sent, counts.refused, len(logs.records)
    spent = _spent(run)
    made = None
    started = time.perf_counter()
    try:
        pr = run.merged_pr(number)
        row.planned = dryrun.planned(run, pr).calls
        made = week.summarize(run, number)
    except PrhubError as exc:
        row.error = f"{type(exc).__name__} (exit {exc.exit_code})"
        row.message = " ".join(str(exc).split())
    except Exception as exc:  # a prhub bug: shown as a row, its traceback on stderr
        traceback.print_exc()
        row.error = f"BUG {type(exc).__name__}"
        row.message = " ".join(str(exc).split())
    row.seconds = time.perf_counter() - started
    if counts.attached:
        row.requests, row.refused = counts.sent - sent, counts.refused - refused
    for record in logs.records[logged:]:
        template = str(record.msg)
        row.rejected += template.startswith("reply of") and "rejected" in template
        row.rechecked += "asking once more" in template
        row.log.append(f"{record.levelname}: {record.getMessage()}")
    if made is None:  # what the failed attempt paid for, where the client counts it
        if spent is not None and (now := _spent(run)) is not None:
            row.calls = now.calls - spent.calls
            row.tokens_in, row.tokens_out = (
                now.tokens_in - spent.tokens_in,
                now.tokens_out - spent.tokens_out,
            )
        return row, None
    content, meta = made.content, made.meta
    row.calls = meta.usage.calls
    row.tokens_in, row.tokens_out = meta.usage.tokens_in, meta.usage.tokens_out
    row.title, row.original_title = content.title, made.original_title
    row.chinese = checks.chinese(content.title)
    row.cited, row.bad = citations(content, pr)
    row.dropped = meta.dropped_citations
    row.placeholders = placeholders(content)
    row.verdict, row.importance, row.minutes = content.verdict, content.importance, content.minutes
    row.failed_checks = list(meta.failed_checks)
    return row, made


def _spent(run: Run) -> Usage | None:
    """Every answered request of the run's LLM client so far, if it counts them."""
    spent = getattr(run.llm, "spent", None)
    return spent if isinstance(spent, Usage) else None


def width(text: str) -> int:
    """Terminal columns `text` takes: Chinese characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def line(cells: Iterable[str]) -> str:
    out = []
    for (_, size, right), text in zip(COLUMNS, cells, strict=True):
        pad = " " * max(0, size - width(text))
        out.append(pad + text if right else text + pad)
    return " ".join(out).rstrip()


def cells(row: Row) -> list[str]:
    def num(value: int | None) -> str:
        return "-" if value is None else str(value)

    def yes(value: bool | None) -> str:
        return "-" if value is None else ("y" if value else "n")

    done = row.ok
    return [
        str(row.number),
        str(row.files),
        str(row.lines),
        num(row.planned),
        num(row.calls),
        num(row.requests),
        num(row.refused),
        yes(row.first_try),
        num(row.fixes),
        str(row.rejected),
        str(row.rechecked),
        yes(row.chinese),
        str(checks.title_length(row.title)) if done else "-",
        str(row.cited) if done else "-",
        str(row.bad) if done else "-",
        str(row.dropped) if done else "-",
        str(len(row.placeholders)) if done else "-",
        row.verdict or "-",
        "-" if row.importance is None else f"{row.importance:.1f}",
        num(row.minutes),
        f"{row.tokens_in:,}",
        f"{row.tokens_out:,}",
        f"{row.seconds:.1f}",
        row.error or ",".join(row.failed_checks) or "-",
    ]


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "0/0"


def tally(counter: Counter[Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counter.items())) or "none"


def report(rows: list[Row], settings: Settings, corpus: Path, mode: str) -> None:
    """Prints the header, the table, the totals, the titles and the errors."""
    print(
        f"model {settings.model} at {shown_url(settings.openai_base_url) or 'api.openai.com'}; "
        f"response mode {settings.response_mode} (at the end: {mode}); "
        f"input budget {settings.input_budget}, output tokens {settings.output_tokens}, "
        f"timeout {settings.timeout:g} s, max attempts {settings.max_attempts}"
    )
    print(f"corpus {corpus} ({settings.repo}): {len(rows)} PRs")
    print()
    print(line(name for name, _, _ in COLUMNS))
    for row in rows:
        print(line(cells(row)))
    done = [r for r in rows if r.ok]
    n = len(done)
    errors = Counter(r.error for r in rows if not r.ok)
    importance = Counter(round(r.importance) for r in done if r.importance is not None)
    checks_failed = Counter(c for r in done for c in r.failed_checks)
    lengths = [checks.title_length(r.title) for r in done]
    print()
    print(f"PRs               {len(rows)}: {n} digested, {len(rows) - n} failed ({tally(errors)})")
    print(f"first-try valid   {share(sum(bool(r.first_try) for r in done), n)}")
    print(
        f"corrective calls  {sum(r.fixes or 0 for r in done)} "
        f"(replies rejected {sum(r.rejected for r in rows)}, "
        f"content checks {sum(r.rechecked for r in rows)}, failed PRs included in these two)"
    )
    if all(r.requests is not None for r in rows):
        print(
            f"HTTP requests     {sum(r.requests or 0 for r in rows)}, "
            f"refused {sum(r.refused or 0 for r in rows)}"
        )
    print(f"Chinese titles    {share(sum(bool(r.chinese) for r in done), n)}")
    if lengths:
        mean = sum(lengths) / len(lengths)
        over = sum(x > checks.TITLE_MAX for x in lengths)
        print(
            f"title length      mean {mean:.1f}, min {min(lengths)}, max {max(lengths)}, "
            f"over {checks.TITLE_MAX}: {over}"
        )
    print(
        f"citations         in the PR {sum(r.cited for r in done)}, "
        f"paths not in the PR {sum(r.bad for r in done)}, dropped {sum(r.dropped for r in done)}"
    )
    print(f"placeholders      {sum(len(r.placeholders) for r in done)}")
    print(f"failed checks     {tally(checks_failed)}")
    print(f"verdict           {tally(Counter(r.verdict for r in done))}")
    spread = [r.importance for r in done if r.importance is not None]
    mean_importance = f" (mean {sum(spread) / len(spread):.1f})" if spread else ""
    print(f"importance        {tally(importance)}{mean_importance}")
    calls = sum(r.calls or 0 for r in rows)
    print(
        f"calls             {calls} (planned {sum(r.planned or 0 for r in rows)}; "
        f"{sum(r.calls or 0 for r in rows if not r.ok)} by failed PRs); tokens in "
        f"{sum(r.tokens_in for r in rows):,}, out {sum(r.tokens_out for r in rows):,}"
    )
    seconds = sum(r.seconds for r in rows)
    per_call = f", {seconds / calls:.1f} per call" if calls else ""
    print(f"seconds           {seconds:.1f} in all{per_call}")
    print()
    print("titles (digest / original)")
    for row in done:
        print(f"#{row.number}  {row.title}")
        print(f"{' ' * (len(str(row.number)) + 1)}  {row.original_title}")
    shown = [r for r in rows if r.placeholders]
    if shown:
        print()
        print("placeholders")
        for row in shown:
            for text in row.placeholders:
                print(f"#{row.number}  {text[:160]!r}")
    if errors:
        print()
        print("errors")
        for row in rows:
            if not row.ok:
                print(f"#{row.number}  {row.error}: {row.message}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--repo", help="owner/name in the corpus (default: its only one)")
    parser.add_argument("--prs", help="comma-separated PR numbers (default: every corpus PR)")
    parser.add_argument("--smallest", action="store_true", help="smallest diffs first")
    parser.add_argument("--limit", type=int, help="at most this many PRs")
    parser.add_argument("--json", type=Path, help="also write each PR's row and digest here")
    parser.add_argument("--verbose", action="store_true", help="prhub's info log on stderr")
    args = parser.parse_args()
    corpus = Path(args.corpus)
    repos = sorted(f"{p.parent.parent.name}/{p.parent.name}" for p in corpus.glob("*/*/pulls"))
    if not repos:
        sys.exit(f"no corpus at {corpus}")
    repo = args.repo or repos[0]
    if repo not in repos:
        sys.exit(f"{repo} is not in the corpus at {corpus}: choose one of {', '.join(repos)}")
    payloads = corpus_prs(corpus, repo)
    if args.prs:
        numbers = list(dict.fromkeys(int(n.strip().lstrip("#")) for n in args.prs.split(",")))
    else:
        numbers = sorted(payloads)
    if args.smallest:
        size = {n: _lines(p) for n, p in payloads.items()}
        numbers.sort(key=lambda n: (size.get(n, 0), n))
    numbers = sorted(numbers[: args.limit] if args.limit else numbers)

    logs = Records()
    prhub_log = logging.getLogger("prhub")
    prhub_log.setLevel(logging.INFO)
    prhub_log.addHandler(logs)
    shown = logging.StreamHandler(sys.stderr)
    shown.setLevel(logging.INFO if args.verbose else logging.WARNING)
    shown.setFormatter(logging.Formatter("  prhub %(levelname)s: %(message)s"))
    prhub_log.addHandler(shown)

    rows: list[Row] = []
    made: dict[int, PRDigest] = {}
    counts = Requests()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        github_args = ["github", "--data", str(corpus), "--token", TOKEN]
        github_url = stack.enter_context(standin(*github_args))
        flags = {"repo": repo, "github_url": github_url, "github_token": TOKEN}
        try:
            settings = load_settings({**flags, "store": Path(tmp) / "quality.db"})
            # Made here, as the run would make it at its first call, to count its requests.
            llm = stack.enter_context(closing(LLM(settings)))
            counts.attach(llm)
            run = stack.enter_context(Run(settings, "bench", llm=llm))
        except PrhubError as exc:
            sys.exit(f"cannot start: {exc}")
        for i, number in enumerate(numbers, 1):
            row, digest = measure(run, number, payloads.get(number, {}), counts, logs)
            rows.append(row)
            if digest is not None:
                made[number] = digest
            outcome = row.error or ",".join(row.failed_checks) or "ok"
            print(
                f"[{i}/{len(numbers)}] #{number} {outcome} {row.seconds:.1f} s",
                file=sys.stderr,
                flush=True,
            )
        mode = getattr(run.llm, "mode", settings.response_mode)
    report(rows, settings, corpus, mode)
    if args.json:
        dump = [
            {
                **asdict(row),
                "digest": made[row.number].model_dump(mode="json") if row.number in made else None,
            }
            for row in rows
        ]
        args.json.write_text(json.dumps(dump, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
