import taintplane.api


def test_public_names_are_sorted_and_importable():
    names = taintplane.api.__all__
    assert names == sorted(names)
    for name in names:
        assert getattr(taintplane.api, name) is not None
