"""Versioned prompt templates: prompts/<task>/vN.system.j2 and vN.user.j2, rendered strictly."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from prhub.errors import ConfigError
from prhub.prepare.tokens import count

if TYPE_CHECKING:
    from prhub.config import Settings

MARGIN = 64  # tokens a budget keeps free for what a stub render cannot foresee (digits, joins)
ZERO_WIDTH_SPACE = "\u200b"
_FENCES = re.compile(
    r"<(/?)(pr_title|pr_body|discussion|diff|notes|file_index|digests|facts|related|last)>",
    re.IGNORECASE,
)


def untrusted(text: str) -> str:
    """PR text with our fence tags defused, so it cannot close the fence it sits in: a zero-width
    space goes before the closing bracket."""
    return _FENCES.sub(lambda m: f"<{m[1]}{m[2]}{ZERO_WIDTH_SPACE}>", text or "")


def default_prompt_dir() -> Path:
    """Prompts shipped in the wheel, else the source tree's prompts/ folder."""
    packaged = Path(__file__).parents[1] / "prompts"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / "prompts"


@dataclass(frozen=True)
class Prompt:
    """One version of one task's system and user templates."""

    task: str
    version: str
    system: jinja2.Template
    user: jinja2.Template
    source: str  # both templates' text: what a cache key must name, wherever they came from
    folder: Path

    @property
    def id(self) -> str:
        return f"{self.task}@{self.version}"

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:12]

    def messages(self, **variables: Any) -> list[dict[str, str]]:
        try:
            return [
                {"role": "system", "content": self.system.render(**variables).strip()},
                {"role": "user", "content": self.user.render(**variables).strip()},
            ]
        except jinja2.TemplateError as exc:  # a user's own version naming what we do not pass
            raise ConfigError(
                f"prompt {self.id} in {self.folder} failed to render: {exc}"
            ) from None


def _folders(task: str, prompt_dir: Path | None) -> list[Path]:
    """Where a task's templates are looked for: the user's folder first, then the shipped one."""
    return [*([prompt_dir / task] if prompt_dir else []), default_prompt_dir() / task]


def versions(task: str, prompt_dir: Path | None = None) -> list[str]:
    """The versions of `task` found in the prompt folders, oldest first."""
    found = {
        p.name.split(".")[0] for f in _folders(task, prompt_dir) for p in f.glob("v*.system.j2")
    }
    return sorted(found, key=lambda v: int(v[1:]) if v[1:].isdigit() else 0)


def tasks(prompt_dir: Path | None = None) -> list[str]:
    """Every task with at least one prompt version."""
    roots = [*([prompt_dir] if prompt_dir else []), default_prompt_dir()]
    return sorted({p.parent.name for root in roots for p in root.glob("*/v*.system.j2")})


def task_prompt(settings: Settings, task: str) -> Prompt:
    """The latest version of a task's prompt, the user's --prompt-dir first."""
    return load_prompt(task, prompt_dir=settings.prompt_dir)


@cache
def load_prompt(task: str, version: str | None = None, prompt_dir: Path | None = None) -> Prompt:
    """The given version of a task's prompt, or its latest; compiled once a process."""
    known = versions(task, prompt_dir)
    version = version or (known[-1] if known else None)
    if version not in known:
        where = ", ".join(str(f) for f in _folders(task, prompt_dir))
        raise ConfigError(f"no prompt {task}@{version} in {where}")
    folder = next(f for f in _folders(task, prompt_dir) if (f / f"{version}.system.j2").is_file())
    # A --prompt-dir is code from anywhere: sandboxed, and without Jinja's globals (cycler,
    # lipsum, ...) whose functions lead to os.environ; only the variables prhub passes.
    env = SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.globals.clear()
    env.filters["untrusted"] = untrusted
    names = (f"{version}.system.j2", f"{version}.user.j2")
    try:
        source = "".join((folder / name).read_text(encoding="utf-8") for name in names)
        system, user = (env.get_template(name) for name in names)
    except (OSError, UnicodeDecodeError, jinja2.TemplateError) as exc:
        raise ConfigError(f"prompt {task}@{version} in {folder} is unusable: {exc}") from None
    return Prompt(task, version, system, user, source, folder)


def listing(prompt_dir: Path | None = None) -> list[str]:
    """One line per prompt version: id, fingerprint, folder, and which one is used."""
    lines = []
    for task in tasks(prompt_dir):
        known = versions(task, prompt_dir)
        for version in known:
            p = load_prompt(task, version, prompt_dir)
            used = "  (used)" if version == known[-1] else ""
            lines.append(f"{p.id:<22} {p.fingerprint}  {p.folder}{used}")
    return lines


def message_tokens(messages: list[dict[str, str]], encoding: str) -> int:
    """Prompt tokens of a chat request, as the budget counts them."""
    return count("\n".join(m["content"] for m in messages), encoding)


# Added to the prompt of a fresh retry, so that it is a request of its own (a batch or a
# prompt cache would answer the same request with the same reply).
AFRESH = "（请重新作答。）"


def afresh(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The request once more, as a new one: the same messages, the last a little longer."""
    *head, last = messages
    return [*head, {**last, "content": f"{last['content']}\n\n{AFRESH}"}]
