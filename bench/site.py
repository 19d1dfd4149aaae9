"""`prhub site` on synthetic stores at 1x, 10x and 100x the corpus (54 digests): build time, peak
memory, the largest page, the bytes one search downloads, the site's size, and an unchanged
rebuild's time as a share of a full build's.

The stores are made here, with no model call: digests and weekly reports written straight into
a store, each week 27 PRs (as the corpus weeks are), the store growing in repositories and weeks
(1x: 1 repository x 2 weeks; 10x: 4 x 5; 100x: 20 x 10; with --deep, one repository holds all
the weeks: 100x is 200 weeks of one). Each build runs in a fresh process, so its peak memory is
its own. Usage:

    python bench/site.py [--scales 1,10,100] [--deep] [--keep DIR]

Figures, not verdicts: it prints what it measured next to the goals and exits 0.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PER_WEEK = 27
SHAPES = {1: (1, 2), 10: (4, 5), 100: (20, 10)}  # scale -> (repositories, weeks)
GOALS = {"page": 300_000, "search": 1_000_000, "rebuild": 0.10, "per_digest": 10_000}
# Words a reader searches for: common, rare, an identifier, two words, Chinese in pieces.
QUERIES = ("修复", "显存", "checkpoint", "rollout 采样", "检查点改动", "sample_logits", "#1234")

PHRASES = (
    "修复了采样温度为 0 时的崩溃",
    "把权重同步改为异步执行",
    "在 rollout 侧补齐多模态特征转发",
    "检查点路径的改动需要与配置一起读",
    "显存峰值下降约三成",
    "调度器在空闲时不再轮询",
    "奖励函数的归一化移到 trainer 中",
    "通信组在重建时释放旧的句柄",
    "日志格式统一为结构化输出",
    "为 FSDP 后端补充了单测",
    "兼容旧配置键并给出弃用提示",
    "非 leader rank 恢复 KV cache 时可能 OOM",
)
IDENTS = (
    "`sample_logits`",
    "`verl/trainer/ppo/ray_trainer.py`",
    "`LLMServerClient.generate`",
    "`checkpoint_manager.save`",
    "`rollout.max_num_batched_tokens`",
    "`FSDPWorker.init_model`",
    "`reward_fn`",
    "`torch.distributed.barrier`",
)
MODULES = ("rollout", "trainer", "algo", "ci", "docs", "fsdp", "megatron", "sglang", "vllm")
KINDS = ("bugfix", "feature", "refactor", "perf", "ci", "docs")


def sentence(rng: random.Random) -> str:
    return f"{rng.choice(PHRASES)}，涉及 {rng.choice(IDENTS)}；{rng.choice(PHRASES)}。"


def make_digest(template: Any, repo: str, number: int, merged: datetime, rng: random.Random) -> Any:
    """A digest of `number` with varied text, tags and times."""
    c = template.content
    content = c.model_copy(
        update={
            "title": f"{rng.choice(PHRASES)}（第 {number} 号）"[:40],
            "verdict": rng.choice(("精读", "快速浏览", "可跳过")),
            "minutes": rng.randint(2, 30),
            "advice": " ".join(sentence(rng) for _ in range(4)),
            "design_decisions": [sentence(rng) for _ in range(2)],
            "risks": [sentence(rng)],
            "follow_ups": [sentence(rng) for _ in range(2)],
            "importance": round(rng.uniform(1, 9.5), 1),
            "importance_reason": sentence(rng),
            "related_prs": [],
        }
    )
    failed = ["advice_uncited"] if number % 23 == 0 else []
    meta = template.meta.model_copy(
        update={
            "cache_key": f"{repo}#{number}",
            "created_at": merged + timedelta(days=1),
            "failed_checks": failed,
        }
    )
    return template.model_copy(
        update={
            "repo": repo,
            "number": number,
            "url": f"https://github.com/{repo}/pull/{number}",
            "original_title": f"[{rng.choice(MODULES)}] fix: change {number}",
            "author": f"dev-{number % 17}",
            "merged_at": merged,
            "modules": rng.sample(MODULES, 2),
            "kind": rng.choice(KINDS),
            "content": content,
            "meta": meta,
        }
    )


def synthesize(path: Path, scale: int, deep: bool = False) -> int:
    """Writes a store of `scale` x 54 digests with their weekly reports; how many digests. A
    `deep` store holds them all in one repository, week after week."""
    from prhub.model import PRDigest, Risk, WeeklyReport
    from prhub.store.store import Store

    fixtures = ROOT / "fixtures"
    d0 = PRDigest.model_validate_json((fixtures / "digests" / "101.json").read_text())
    r0 = WeeklyReport.model_validate_json(
        (fixtures / "reports" / "acme-rocket-2026-W31.json").read_text()
    )
    repos, weeks = SHAPES[scale]
    if deep:
        repos, weeks = 1, repos * weeks
    rng = random.Random(scale)
    made = 0
    with closing(Store(path)) as store:
        for i in range(repos):
            repo = f"org{i:02d}/project{i:02d}"
            for w in range(weeks):
                monday = datetime.fromisocalendar(2026, 10, 1) + timedelta(weeks=w)
                year, week, _ = monday.isocalendar()
                start = monday.replace(tzinfo=UTC) - timedelta(hours=8)
                numbers = list(range(1000 + w * PER_WEEK, 1000 + (w + 1) * PER_WEEK))
                digests = [
                    make_digest(d0, repo, n, start + timedelta(hours=6 * k + 1), rng)
                    for k, n in enumerate(numbers)
                ]
                for d in digests:
                    store.save_digest(d)
                tags: dict[str, int] = {}
                for d in digests:
                    for t in d.tags:
                        tags[t] = tags.get(t, 0) + 1
                key = sorted(numbers, key=lambda n: -digests[n - numbers[0]].content.importance)
                facts = r0.facts.model_copy(
                    update={
                        "repo": repo,
                        "year": year,
                        "week": week,
                        "start": start,
                        "end": start + timedelta(days=7),
                        "prs": numbers,
                        "pr_count": len(numbers),
                        "tags": tags,
                        "key_prs": key[:8],
                        "hot_files": [],
                        "hot_dirs": [],
                        "authors": [],
                        "untested": [],
                        "breaking": [],
                        "first_time": [],
                    }
                )
                assert r0.narrative is not None
                narrative = r0.narrative.model_copy(
                    update={
                        "key_prs": [
                            k.model_copy(update={"number": n})
                            for k, n in zip(r0.narrative.key_prs, key, strict=False)
                        ],
                        "trends": [],
                        "highlights": [f"#{n} {sentence(rng)}" for n in key[:3]],
                        "risks": [Risk(text=f"#{key[0]} {sentence(rng)}")],
                        "key_changes": [f"#{n} {sentence(rng)}" for n in key[:3]],
                        "follow_ups": [sentence(rng)],
                        "lead": sentence(rng),
                    }
                )
                meta = r0.meta.model_copy(update={"generated_at": start + timedelta(days=7)})
                report = r0.model_copy(
                    update={
                        "facts": facts,
                        "narrative": narrative,
                        "digests": digests,
                        "meta": meta,
                    }
                )
                store.save_report(report)
                made += len(digests)
    return made


def build_once(store: Path, out: Path) -> dict[str, float]:
    """One `prhub site` in this process: its time and the memory it took beyond the start."""
    from prhub.config import Settings
    from prhub.publish import site
    from prhub.store.store import Store

    settings = Settings()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start, cpu = time.perf_counter(), time.process_time()
    with closing(Store(store)) as s:
        done = site.build(settings, s, out, None, False)
    took, used = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": took, "cpu": used, "peak_kib": peak - before, "wrote": done.wrote}


def measure(store: Path, out: Path) -> dict[str, float]:
    """A build in a fresh process."""
    code = (
        "import json,sys;from pathlib import Path;sys.path.insert(0,sys.argv[1]);"
        "from bench.site import build_once;"
        "print(json.dumps(build_once(Path(sys.argv[2]),Path(sys.argv[3]))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(ROOT), str(store), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"the build failed:\n{done.stderr}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def search_bytes(out: Path) -> tuple[int, str]:
    """The most bytes one of QUERIES downloads, and that query."""
    try:
        from prhub.publish.search import needed
    except ImportError:  # the index inline in the search page: every search loads it whole
        page = out / "search.html"
        return page.stat().st_size, "(any)"
    worst = (0, "")
    for q in QUERIES:
        files = needed(out, q)
        worst = max(worst, (sum((out / f).stat().st_size for f in files), q))
    return worst


def figures(out: Path, digests: int) -> dict[str, Any]:
    files = [p for p in out.rglob("*") if p.is_file() and not p.name.startswith(".")]
    pages = [p for p in files if p.suffix == ".html"]
    largest = max(pages, key=lambda p: p.stat().st_size)
    size = sum(p.stat().st_size for p in files)
    searched, query = search_bytes(out)
    return {
        "files": len(files),
        "size": size,
        "per_digest": size / digests,
        "largest": (largest.stat().st_size, str(largest.relative_to(out))),
        "search": (searched, query),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scales", default="1,10,100")
    parser.add_argument("--keep", type=Path, help="build into this folder and keep it")
    parser.add_argument(
        "--deep", action="store_true", help="one repository holds every week (a long history)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for scale in (int(s) for s in args.scales.split(",")):
            shape = f"{scale}x" + ("-deep" if args.deep else "")
            store, out = base / f"store-{shape}.db", base / f"site-{shape}"
            store.unlink(missing_ok=True)
            digests = synthesize(store, scale, args.deep)
            full = measure(store, out)
            # Three unchanged rebuilds, the median: one figure on a busy machine can mislead.
            again = sorted((measure(store, out) for _ in range(3)), key=lambda m: m["seconds"])[1]
            f = figures(out, digests)
            ratio = again["seconds"] / full["seconds"]
            cpu = again["cpu"] / full["cpu"]
            print(f"{shape}: {digests} digests, {f['files']} files")
            print(
                f"  full build {full['seconds']:.2f} s ({full['cpu']:.2f} s CPU), peak memory "
                f"{full['peak_kib'] / 1024:.1f} MiB; unchanged rebuild {again['seconds']:.2f} s = "
                f"{ratio:.0%} of a full build, {cpu:.0%} of its CPU (goal <= "
                f"{GOALS['rebuild']:.0%}), peak {again['peak_kib'] / 1024:.1f} MiB"
            )
            print(
                f"  largest page {f['largest'][0] / 1000:.0f} KB ({f['largest'][1]}; goal <= "
                f"{GOALS['page'] / 1000:.0f} KB); one search <= {f['search'][0] / 1000:.0f} KB "
                f"(worst query {f['search'][1]!r}; goal <= {GOALS['search'] / 1000:.0f} KB)"
            )
            print(
                f"  site {f['size'] / 1e6:.1f} MB, {f['per_digest'] / 1000:.1f} KB a digest "
                f"(goal <= {GOALS['per_digest'] / 1000:.0f} KB)"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
