import shutil
import subprocess
import sys
import textwrap

import pytest
import tiktoken

from prhub.prepare import tokens

PROBE = textwrap.dedent(
    """
    import socket
    try:
        socket.create_connection(("1.1.1.1", 443), timeout=2)
        print("NETWORK")
    except OSError:
        pass
    from prhub.prepare.tokens import count, get_encoding
    print(count("def f(x):\\n    return x  # 你好"), get_encoding("cl100k_base").name)
    """
)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_tokenizer_loads_with_no_network_at_all(tmp_path):
    env = {"PRHUB_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if result.returncode and "Operation not permitted" in result.stderr:
        pytest.skip("unshare -n is not permitted here")
    assert result.returncode == 0, result.stderr
    assert "NETWORK" not in result.stdout
    number, name = result.stdout.split()
    assert int(number) > 5 and name == "cl100k_base"
    # nothing was written outside the cache folder we named
    assert list((tmp_path / "cache" / "tiktoken").iterdir())


def test_counts_match_tiktokens_own_encoding_of_the_same_ranks():
    enc = tokens.get_encoding("o200k_base")
    assert isinstance(enc, tiktoken.Encoding)
    assert tokens.count("hello world") == 2
    assert enc.decode(enc.encode_ordinary("多语言 mixed text")) == "多语言 mixed text"


def test_special_token_text_is_counted_as_plain_text():
    assert tokens.count("<|endoftext|>") > 1


def test_truncate_keeps_at_most_the_limit():
    text = "word " * 500
    cut = tokens.truncate(text, 50)
    assert tokens.count(cut) <= 50
    assert text.startswith(cut)
    assert tokens.truncate("short", 50) == "short"


def test_unknown_encoding_is_refused():
    with pytest.raises(ValueError, match="unknown encoding"):
        tokens.get_encoding("p50k_base")


def test_an_unusable_cache_dir_leaves_no_temporary_copy_behind(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {"PRHUB_CACHE_DIR": str(blocker), "TMPDIR": str(scratch), "PATH": "/usr/bin:/bin"}
    code = "from prhub.prepare.tokens import count; print(count('你好 world'))"
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
        )
        assert result.returncode == 0, result.stderr
        assert int(result.stdout) > 1
        assert "PRHUB_CACHE_DIR" in result.stderr
        assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("limit", range(1, 40))
def test_truncate_never_cuts_inside_a_character(limit):
    # Rare CJK characters and emoji take several tokens each: a cut between them used to
    # decode a partial character as U+FFFD.
    text = "中文说明：改动了采样器🙂👍🏽龘靐齉，影响 rollout 🚀。" * 4
    cut = tokens.truncate(text, limit)
    assert "\ufffd" not in cut
    assert text.startswith(cut)
    assert tokens.count(cut) <= limit
