"""The one `metadata` filter of list calls: what is no filter, and its two rules for values that
are not strings (agents and conversations refuse them; batch jobs match their JSON text)."""

from __future__ import annotations

import pytest

from maestrale.core.errors import BadRequest
from maestrale.core.metadata import metadata_filter


@pytest.mark.parametrize("raw", [None, "", "~?~unset~?~sentinel~?~", "[1]", '"text"', "{bad"])
def test_anything_but_a_json_object_is_no_filter(raw: str | None) -> None:
    assert metadata_filter(raw) == {}
    assert metadata_filter(raw, non_string="stringify") == {}


def test_non_string_values_are_refused_or_matched_as_json_text() -> None:
    assert metadata_filter('{"team": "a"}') == {"team": "a"}
    with pytest.raises(BadRequest) as refused:
        metadata_filter('{"n": 1}')
    assert refused.value.code == "invalid_metadata"
    wanted = metadata_filter('{"n": 1, "ok": true, "t": "x"}', non_string="stringify")
    assert wanted == {"n": "1", "ok": "true", "t": "x"}
