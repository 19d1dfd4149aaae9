"""The week's texts made of its facts alone, which a report prints around the model's prose."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Collection

from prhub.model import AuthorCount, Revert, Risk, WeeklyFacts
from prhub.text import cited, sentences

# One author stands out with at least this many PRs and this share of the week, alone at the top.
CONCENTRATION = 0.15
CONCENTRATION_PRS = 3


def period_word(f: WeeklyFacts) -> str:
    """What the report calls its period: 本周 for an ISO week, 本期 for any other window."""
    return "本周" if f.week is not None else "本期"


def last_word(f: WeeklyFacts) -> str:
    """What the report calls the period before: 上周, or 上期."""
    return "上周" if f.week is not None else "上期"


def top_authors(f: WeeklyFacts) -> list[AuthorCount]:
    """The authors with the most PRs: one, or all who tie for the most."""
    if not f.authors:
        return []
    most = len(f.authors[0].prs)
    return [a for a in f.authors if len(a.prs) == most]


def concentrated(f: WeeklyFacts) -> bool:
    """True when one author stands out: 3 or more PRs, >= 15 % of the week, and no tie."""
    top = top_authors(f)
    return (
        len(top) == 1
        and len(top[0].prs) >= CONCENTRATION_PRS
        and f.top_author_share >= CONCENTRATION
    )


def figures(f: WeeklyFacts, escape: Callable[[str], str] = str) -> str:
    """The executive summary's figures, computed, never written by the model."""
    name = escape(f.repo.split("/")[-1])
    lines = f"+{f.additions:,} / −{f.deletions:,} 行"
    text = f"{period_word(f)} {name} 共合入 {f.pr_count} 个 PR（{lines}）"
    top = [f"{escape(tag)}（{n}）" for tag, n in list(f.tags.items())[:4]]
    if top:
        text += "，标签分布集中在 " + "、".join(top)
    if f.mean_importance is not None:
        text += f"，平均重要性 {f.mean_importance:.2f}"
    return text + "。"


def lead(f: WeeklyFacts, escape: Callable[[str], str] = str) -> str:
    """A lead paragraph from the facts, for a week whose model wrote none."""
    name = escape(f.repo.split("/")[-1])
    text = f"{period_word(f)} {name} 共合入 {f.pr_count} 个 PR"
    themes = [escape(t) for t in list(f.modules or f.tags)[:3]]
    if themes:
        text += "，主要涉及 " + "、".join(themes)
    if f.key_prs:
        text += f"，其中重点 PR {len(f.key_prs)} 个"
    if f.reverts:
        text += f"，revert {len(f.reverts)} 个"
    return text + "。"


def author_line(f: WeeklyFacts, escape: Callable[[str], str] = str) -> str:
    """Who made the most PRs; a tie names everyone in it and calls none of them the top."""
    top = top_authors(f)
    if not top:
        return ""
    share = f"{f.top_author_share:.0%}"
    count, people = len(top[0].prs), f"作者 {len(f.authors)} 人"
    if len(top) == 1:
        return f"{people}，最多产的 {escape(top[0].author)} 贡献 {count} 个（{share}）。"
    names = "、".join(escape(a.author) for a in top)
    return f"{people}，{names} 并列最多，各贡献 {count} 个（各 {share}）。"


def author_highlight(f: WeeklyFacts, escape: Callable[[str], str] = str) -> str:
    """The highlight on author concentration, when one author stands out."""
    if not concentrated(f):
        return ""
    [top] = top_authors(f)
    refs = "、".join(f"#{n}" for n in top.prs)
    return (
        f"作者集中度较高：{escape(top.author)} {period_word(f)}贡献 {len(top.prs)} 个 PR"
        f"（{f.top_author_share:.0%}：{refs}），单点知识风险需要关注。"
    )


REVERTS = "撤销了"
BREAKS = "可能破坏现有用法"
UNTESTED = "改了代码但没有改测试"


def fact_risks(f: WeeklyFacts, cited: Collection[int] = ()) -> list[str]:
    """One risk line per PR the facts flag (a revert, a breaking change, code without tests),
    in PR order, for the PRs not in `cited`."""
    said: defaultdict[int, list[str]] = defaultdict(list)
    for rev in f.reverts:
        delay = f"（合入后 {rev.delay_hours} 小时）" if rev.delay_hours is not None else ""
        said[rev.number].append(f"{REVERTS} {_reverted(rev)}{delay}")
    breaks: defaultdict[int, list[str]] = defaultdict(list)
    for b in f.breaking:
        # A reason's own colon ("配置项删除：a.b") would nest inside the line's.
        breaks[b.number] += [r.replace("：", " ", 1) for r in b.reasons]
    for number, reasons in breaks.items():
        said[number].append(f"{BREAKS}：" + "，".join(dict.fromkeys(reasons)))
    for number in f.untested:
        said[number].append(UNTESTED)
    return [
        f"#{n} {'；'.join(dict.fromkeys(parts))}。"
        for n, parts in sorted(said.items())
        if n not in cited
    ]


def fact_headlines(f: WeeklyFacts) -> list[str]:
    """The risks the facts flag in short, one line for each revert, one for the breaking
    changes and one for the code without tests: the top of a report, before the full list."""
    lines = [f"#{rev.number} {REVERTS} {_reverted(rev)}。" for rev in f.reverts]
    if f.breaking:
        lines.append(f"{_few([b.number for b in f.breaking])} {BREAKS}。")
    if f.untested:
        lines.append(f"{_few(f.untested)} {UNTESTED}。")
    return lines


def _reverted(rev: Revert) -> str:
    return f"#{rev.reverted}" if rev.reverted else "一个未知 PR"


def _few(numbers: list[int], most: int = 5) -> str:
    """PRs by number, the first `most` of them and how many in all."""
    shown = "、".join(f"#{n}" for n in numbers[:most])
    return shown + (f" 等 {len(numbers)} 个 PR" if len(numbers) > most else "")


def risks(written: list[str], f: WeeklyFacts) -> list[str]:
    """The model's risks, then the facts' line for each flagged PR none of them cites."""
    numbers = {n for text in written for n in cited(text)}
    return [*written, *fact_risks(f, numbers)]


# What a short risk and its risk share, as a reader checks it holds a noun of its risk: a PR
# number, a name in Latin letters or digits, or a Chinese word (two characters running).
_TERM = re.compile(r"[A-Za-z][\w./-]*[A-Za-z0-9]|[\u4e00-\u9fff]{2,}")
_END = "。！？!?"


def terms(text: str) -> set[str]:
    """The nouns a reader would look for: PR numbers, Latin names and their parts, and every
    pair of Chinese characters running."""
    found = {f"#{n}" for n in cited(text)}
    for m in _TERM.finditer(text):
        word = m.group()
        if "\u4e00" <= word[0] <= "\u9fff":
            found |= {text[i : i + 2] for i in range(m.start(), m.end() - 1)}
        else:  # `bypass_mode` names bypass too, `a/b.py` b.py
            found |= {word.lower(), *(p for p in re.split(r"[_./-]", word.lower()) if len(p) > 3)}
    latin = {t for t in found if not ("\u4e00" <= t[0] <= "\u9fff")}
    return latin | {t for t in found - latin if len(t) == 2}


def holds_noun(short: str, risk: str) -> bool:
    """Whether a short risk names something its risk names: a PR, a name, or two Chinese
    words of it."""
    mine, theirs = terms(short), terms(risk)
    latin = {t for t in mine & theirs if not ("\u4e00" <= t[0] <= "\u9fff")}
    return bool(latin) or len(mine & theirs) >= 2


def short_risk(risk: Risk) -> str:
    """A risk on one line, whole: the model's headline when it names something of its risk,
    else the risk's first sentence. Never a clause cut off, never PR numbers added."""
    text = " ".join(risk.text.split())
    head = " ".join(risk.headline.split())
    if head and holds_noun(head, text):
        return ended(head)
    return ended(next(iter(sentences(text)), text))


def ended(sentence: str) -> str:
    """A sentence that ends as one: a clause mark at its end made a full stop."""
    sentence = sentence.strip().rstrip("，,；;：:、 ")
    return sentence if not sentence or sentence[-1] in _END else sentence + "。"


def full_risk(risk: Risk) -> str:
    """A risk as the full list shows it: its text, led by its headline when the headline
    cites a PR the text does not, so no citation the model made is lost."""
    if set(cited(risk.headline)) - set(cited(risk.text)):
        return ended(" ".join(risk.headline.split())) + risk.text
    return risk.text


def author_unsaid(highlights: Collection[str], f: WeeklyFacts) -> bool:
    """Whether the highlight on author concentration adds something: one author stands out
    and none of the model's highlights names them already."""
    if not concentrated(f):
        return False
    [top] = top_authors(f)
    return not any(top.author.lower() in h.lower() for h in highlights)
