import chainwarden


def test_version_is_exposed() -> None:
    assert chainwarden.__version__.count(".") == 2
