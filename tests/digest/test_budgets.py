"""Budgets from the room there is: a short diff leaves its room to the PR's body, a big PR's
body goes to its chunk calls once in substance, and chunk notes are held to the characters the
prompt states, which come from the final call's real room."""

from __future__ import annotations

import re

from prhub.config import Settings
from prhub.digest.budgets import CORRECTION
from prhub.digest.digest import NO_NOTES, plan
from prhub.digest.notes import CHARS_PER_TOKEN, NOTE_LABELS, NOTE_SHARES, REPLY_SHARE, note_limits
from prhub.llm.prompt import MARGIN, message_tokens
from prhub.prepare import body_budget
from prhub.prepare.tokens import count
from tests.factories import change, make_pr, synthetic

SETTINGS = Settings()
# An author's note, long, under a 13-line diff: what a reviewer needs to trust the change.
NOTE = "\n".join(
    f"- 核对了 CODEOWNERS 第 {i} 条：`/verl/workers/rollout/` 归 rollout 组，保持不变。"
    for i in range(1, 80)
)


def test_a_short_diff_leaves_its_room_to_the_whole_body():
    pr = make_pr([change(".github/CODEOWNERS", added=9, deleted=4)], body=NOTE)
    assert count(NOTE, SETTINGS.encoding) > body_budget(SETTINGS)  # once cut at its budget
    planned = plan(pr, SETTINGS)
    assert planned.prepared.body == NOTE and len(planned.calls) == 1
    assert "第 79 条" in planned.calls[0][-1]["content"]
    assert message_tokens(planned.calls[0], SETTINGS.encoding) <= SETTINGS.input_budget


def test_a_diff_that_fills_its_call_leaves_the_body_its_own_budget():
    pr = synthetic(500).model_copy(update={"body": NOTE})
    body = plan(pr, Settings(input_budget=8_000)).prepared.body
    assert count(body, SETTINGS.encoding) <= body_budget(Settings(input_budget=8_000))
    assert "PR 描述过长" in body  # and it says what was left out


def test_chunk_notes_get_the_final_calls_real_room_stated_in_characters():
    config = Settings(input_budget=24_000)
    planned = plan(synthetic(3000), config)
    assert planned.map_reduce
    parts = len(planned.calls)
    note = planned.budgets.note
    empty = [NO_NOTES] * parts
    final = message_tokens(planned.final(empty, "json_object"), config.encoding)
    # The notes take the room the final call leaves, up to what one reply can hold.
    room = config.input_budget - final - CORRECTION - MARGIN
    assert note == min(int(config.output_tokens * REPLY_SHARE), room // parts)
    assert final + parts * note <= config.input_budget
    limits = note_limits(note)
    for name, share in NOTE_SHARES.items():
        assert limits[name] == int((note - NOTE_LABELS) * share * CHARS_PER_TOKEN)
    told = planned.calls[0][0]["content"]
    assert f"标识符；不超过 {limits['summary']} 个字符" in told
    said = re.findall(r"不超过 (\d+) 个字符", told)
    assert [int(n) for n in said] == list(limits.values())  # the unit enforced, as enforced
