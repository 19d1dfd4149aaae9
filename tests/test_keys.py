"""Cache keys: the same inputs name the same digest; any change of input misses."""

from __future__ import annotations

from pathlib import Path

from prhub.config import Settings
from prhub.keys import digest_key
from prhub.model import Comment
from tests.test_prepare import change, make_pr


def test_a_digest_key_names_what_the_model_is_shown() -> None:
    base = make_pr([change("pkg/a.py"), change("gen/api.pb.go")])
    settings = Settings()
    key = digest_key(base, settings)
    assert digest_key(base.model_copy(), settings) == key  # same inputs, same key
    talked = base.model_copy(
        update={"discussion": [Comment(kind="conversation", author="a", body="Add a test?")]}
    )
    files = list(base.files)
    files[1] = files[1].model_copy(update={"marked": "generated"})
    marked = base.model_copy(update={"files": files})
    others = [
        talked,  # a comment written after the digest was made
        marked,  # .gitattributes now marks a file
        base.model_copy(update={"merge_commit_sha": "other"}),
    ]
    assert len({key, *(digest_key(pr, settings) for pr in others)}) == 4
    assert digest_key(base, Settings(model="other")) != key
    assert digest_key(base, Settings(input_budget=8000)) != key


def test_a_users_prompt_version_is_a_new_key(tmp_path: Path) -> None:
    pr = make_pr([change("pkg/a.py")])
    mine = tmp_path / "digest"
    mine.mkdir()
    (mine / "v9.system.j2").write_text("system")
    (mine / "v9.user.j2").write_text("{{ pr.title }}")
    assert digest_key(pr, Settings(prompt_dir=tmp_path)) != digest_key(pr, Settings())
