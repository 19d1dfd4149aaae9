"""Cache keys: the same inputs name the same digest; any change of input misses."""

from __future__ import annotations

from pathlib import Path

from prhub.config import Settings
from prhub.model import Comment, Review
from prhub.run.keys import digest_key
from tests.factories import change, make_pr


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
        # the description, title, labels or reviews edited after the merge
        base.model_copy(update={"body": "Now with a description."}),
        base.model_copy(update={"title": "feat: a better title"}),
        base.model_copy(update={"labels": ["rollout"]}),
        base.model_copy(update={"reviews": [Review(author="lead", state="APPROVED")]}),
    ]
    assert len({key, *(digest_key(pr, settings) for pr in others)}) == 8
    assert digest_key(base, Settings(model="other")) != key
    assert digest_key(base, Settings(input_budget=8000)) != key


def test_a_users_prompt_version_is_a_new_key(tmp_path: Path) -> None:
    pr = make_pr([change("pkg/a.py")])
    mine = tmp_path / "digest"
    mine.mkdir()
    (mine / "v9.system.j2").write_text("system")
    (mine / "v9.user.j2").write_text("{{ pr.title }}")
    assert digest_key(pr, Settings(prompt_dir=tmp_path)) != digest_key(pr, Settings())


def test_a_narrative_key_follows_what_its_digests_say() -> None:
    import json

    from prhub.model import PRDigest, WeeklyFacts
    from prhub.run.keys import narrative_key
    from tests.factories import FIXTURES

    d = PRDigest.model_validate_json((FIXTURES / "digests" / "101.json").read_text())
    facts = WeeklyFacts.model_validate(
        json.loads((FIXTURES / "reports" / "acme-rocket-2026-W31.json").read_text())["facts"]
    )
    remade = d.model_copy(update={"content": d.content.model_copy(update={"advice": "新的建议"})})
    assert remade.meta.cache_key == d.meta.cache_key  # made again under the same key...
    settings = Settings()
    assert narrative_key(facts, [d], settings) != narrative_key(facts, [remade], settings)
