"""Grounding that is precise: a version pair is no path, a bare file name claims a changed file
only where a clause says it changed, a shorthand or a plain word loses its code marks and not its
finding, a command or a value keeps them, and every change grounding makes is recorded."""

from __future__ import annotations

import pytest

from prhub.digest.claims import PATH, Shown, Span, files
from prhub.digest.ground import ground_digest
from prhub.model import Comment, FileChange, Neighbour
from tests.factories import digest_content, make_pr


def changed(path: str, *lines: str) -> FileChange:
    patch = "\n".join(["@@ -1,2 +1,9 @@", *(f"+{line}" for line in lines)])
    return FileChange(path=path, status="modified", additions=len(lines), patch=patch)


def npu_pr():
    """An NPU image PR: its diff pins versions and names a shorthand's long form; its body
    mentions a Dockerfile and a requirements file it does not change."""
    files = [
        changed("docker/ascend/build.sh", "CANN_TAG=8.2.rc1_a2", "PY_VERSIONS=3.10/3.11"),
        changed("verl/utils/device.py", "def npu_version_a2():", "    return 'npu_a2'"),
    ]
    body = (
        "Bumps the CANN tag for A2 boards. The Dockerfile in the NPU docs is unchanged. "
        "requirements-npu.txt pins torch_npu 2.5."
    )
    pr = make_pr(files, title="[ci] chore: bump CANN tag", body=body)
    said = Comment(kind="conversation", author="x", association="MEMBER", body="LGTM")
    return pr.model_copy(update={"discussion": [said]})


@pytest.mark.parametrize("text", ["3.10/3.11", "0.25/0.26", "v0.8.5/v0.9.0", "2.5/2.6.1"])
def test_a_number_or_version_pair_is_no_path(text):
    assert PATH.findall(f"支持 Python {text} 两个版本") == []
    assert files(f"升级 {text}") == []


def test_a_real_path_with_digits_is_still_a_path():
    found = PATH.findall("改了 docker/v0.8/Dockerfile.ci 和 a/3.10/x.py")
    assert found == ["docker/v0.8/Dockerfile.ci", "a/3.10/x.py"]


@pytest.mark.parametrize(
    "item",
    [
        "镜像同时支持 Python 3.10/3.11，升级后需要分别验证。",
        "NPU 文档里的 Dockerfile 也应同步检查版本。",  # a word: no clause says it changed
        "`requirements-npu.txt` 未同步更新，torch_npu 版本可能不一致。",  # said unchanged
        "`_a2` 后缀的设备检测只覆盖 A2 板卡。",  # a shorthand of npu_version_a2
        "构建脚本新增 `CANN_TAG=8.2.rc1_a2`，镜像标签随之变化。",  # a value: marks kept
        "发布前运行 `ulimit -l unlimited` 再拉起容器。",  # a command: marks kept
    ],
)
def test_findings_a_strong_model_grounded_are_kept(item):
    c, dropped = ground_digest(digest_content(risks=[item]), npu_pr())
    assert [d for d in dropped if d.reason != "unverified_span"] == []
    assert len(c.risks) == 1


def test_a_bare_file_name_said_to_change_that_no_changed_file_bears_goes():
    claims = ["修改了 Dockerfile 的基础镜像。", "requirements-npu.txt 改成了 torch_npu 2.6。"]
    c, dropped = ground_digest(digest_content(risks=claims), npu_pr())
    assert c.risks == []
    assert [d.reason for d in dropped] == ["mentioned_as_changed", "mentioned_as_changed"]


def test_a_shorthand_loses_its_code_marks_and_the_change_is_recorded():
    item = "`_a2` 后缀的设备检测只覆盖 A2 板卡。"
    c, dropped = ground_digest(digest_content(risks=[item]), npu_pr())
    assert c.risks == ["_a2 后缀的设备检测只覆盖 A2 板卡。"]
    assert [(d.field, d.text, d.reason) for d in dropped] == [("risks", "`_a2`", "unverified_span")]


def test_a_command_and_a_value_keep_their_code_marks_as_written():
    items = ["发布前运行 `ulimit -l unlimited` 再拉起容器。", '配置改为 `{"npu": true}` 即可。']
    c, dropped = ground_digest(digest_content(risks=items), npu_pr())
    assert c.risks == items and dropped == []


def test_an_invented_name_the_claim_rests_on_still_takes_its_finding():
    item = "`NpuBoard.flush_caches()` 会清空设备缓存。"
    c, dropped = ground_digest(digest_content(risks=[item]), npu_pr())
    assert c.risks == [] and [d.reason for d in dropped] == ["unknown_identifier"]


def test_a_span_is_judged_verified_kept_or_unmarked():
    shown = Shown(npu_pr())
    assert shown.span("npu_version_a2") is Span.VERIFIED
    assert shown.span("pip install -U vllm") is Span.KEPT
    assert shown.span("GPUs") is Span.UNMARKED and shown.span("_a2") is Span.UNMARKED
    assert shown.span("_b7") == "unknown_identifier"  # no name of the input holds it


def test_a_neighbours_number_and_the_names_of_its_title_may_be_cited():
    near = Neighbour(number=7001, title="[npu] fix: npu_board_probe for A3", relation="referenced")
    item = "建议与 #7001 一起读：`npu_board_probe` 在那里加入。"
    alone, dropped = ground_digest(digest_content(risks=[item], related_prs=[7001]), npu_pr())
    assert alone.risks == [] and alone.related_prs == []
    told, dropped = ground_digest(
        digest_content(risks=[item], related_prs=[7001]), npu_pr(), [near]
    )
    assert told.risks == [item] and told.related_prs == [7001] and dropped == []
