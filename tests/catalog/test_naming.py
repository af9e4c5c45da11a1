import pytest

from mcpstation.catalog.naming import PUBLIC_NAME_PATTERN, public_name, sanitize


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("prefix", "mcp_github_search"), ("namespace", "gh__search"), ("bare", "search")],
)
def test_naming_modes_render_the_documented_shapes(mode, expected):
    assert public_name(mode, server="github", namespace="gh", name="search") == expected


def test_namespace_mode_falls_back_to_the_server_name():
    assert public_name("namespace", server="files", namespace=None, name="read") == "files__read"


def test_unsafe_characters_become_underscores():
    assert sanitize("my server.read/file") == "my_server_read_file"
    assert PUBLIC_NAME_PATTERN.match(public_name("prefix", server="a b", namespace=None, name="c.d"))


def test_long_names_are_cut_with_a_stable_distinct_hash():
    a = sanitize("x" * 80 + "alpha")
    b = sanitize("x" * 80 + "beta")
    assert len(a) == 64 and len(b) == 64
    assert a != b
    assert a == sanitize("x" * 80 + "alpha")
    assert PUBLIC_NAME_PATTERN.match(a)


def test_empty_name_still_matches_the_pattern():
    assert PUBLIC_NAME_PATTERN.match(sanitize(""))
