import prhub


def test_every_exported_name_exists_and_nothing_else_is_promised():
    assert sorted(prhub.__all__) == prhub.__all__
    for name in prhub.__all__:
        assert getattr(prhub, name) is not None
    public = {n for n in vars(prhub) if not n.startswith("_")} - set(prhub.__all__)
    # submodules are reachable but not promised
    assert all(type(getattr(prhub, n)).__name__ == "module" for n in public), public
