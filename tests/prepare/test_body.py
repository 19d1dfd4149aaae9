"""strip_template(): a PR body read as Markdown, code blocks whole whatever their fences."""

from __future__ import annotations

from prhub.prepare.body import strip_template


def test_a_four_backtick_fence_around_a_three_backtick_one_survives_whole() -> None:
    body = (
        "## Config\n\nThe example the docs now show:\n\n"
        "````markdown\n```yaml\n# the learning rate\nlr: 1e-4\n```\n````\n\nDone."
    )
    assert strip_template(body) == body


def test_a_tilde_fence_holds_backticks_headings_and_boxes_as_code() -> None:
    body = "## Repro\n\n~~~\n```\n## Checklist\n- [ ] not a box\n~~~\n\nRan it."
    assert strip_template(body) == body


def test_an_unclosed_fence_runs_to_the_end_and_keeps_what_it_holds() -> None:
    body = (
        "## Log\n\n```\nTraceback (most recent call last):\n<!-- a line of the log -->\n"
        "## Checklist\n- [ ] a box in the log"
    )
    assert strip_template(body) == body


def test_an_html_comment_spanning_lines_goes_with_what_it_hides() -> None:
    body = (
        "## Summary\n<!-- Describe the change.\n\n## Checklist\n- [ ] a box\n```\n# x\n```\n-->\n"
        "Adds X.\n\n## Notes\n\nKeep <!-- hidden\nacross lines --> this.\n<!-- never closed\nhidden"
    )
    assert strip_template(body) == "## Summary\n\nAdds X.\n\n## Notes\n\nKeep  this."


def test_a_heading_inside_a_fence_is_not_a_section() -> None:
    body = "## Repro\n\n```\n## Checklist\n- [ ] run the tests\n```\n\n## Checklist\n\n- [ ] a box"
    assert strip_template(body) == "## Repro\n\n```\n## Checklist\n- [ ] run the tests\n```"


def test_code_keeps_what_looks_like_a_comment_or_a_trailer() -> None:
    body = "Fix.\n\n```\nSigned-off-by: ci\n```\n\nSigned-off-by: A Person <a@example.com>"
    assert strip_template(body) == "Fix.\n\n```\nSigned-off-by: ci\n```"


def test_placeholder_code_goes_in_any_fence_and_indented_under_an_item() -> None:
    body = "## Test\n\n~~~bash\n# paste the commands here\n~~~\n\n- Ran:\n\n  ```\n  // here\n  ```"
    assert strip_template(body) == "## Test\n\n- Ran:"


def test_a_link_pasted_under_an_empty_item_of_a_checklist_goes_with_it() -> None:
    body = (
        "## Checklist Before Starting\n\n- [x] Search for similar PRs:\n-\n"
        "https://github.com/o/r/pulls?q=cache\n- [x] Related to #41.\n\nBenchmarks are below."
    )
    assert strip_template(body) == (
        "## Checklist Before Starting\n\n- [x] Related to #41.\n\nBenchmarks are below."
    )


def test_a_quote_opening_a_section_is_guidance_up_to_the_authors_own_line() -> None:
    body = "## Summary\n\n> Describe the change. Link the issues it\ncloses.\nMoves the cache.\n"
    assert strip_template(body) == "## Summary\n\nMoves the cache."
    callout = "## Summary\n\n> [!NOTE]\n> Needs the new driver."
    assert strip_template(callout) == callout
