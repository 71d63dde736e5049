"""``refcompiler.lazy``: a package's names load on first use and are kept."""

from __future__ import annotations

import pytest

from refcompiler.lazy import exports, names


def test_a_name_loads_on_first_use_and_is_kept_and_others_are_attribute_errors():
    namespace: dict[str, object] = {}
    table = {**names(("json", ("dumps",))), "decoder": ("json.decoder", None)}
    getattr_, dir_ = exports("pkg", table, namespace)
    import json
    import json.decoder

    assert getattr_("dumps") is json.dumps and namespace["dumps"] is json.dumps
    assert getattr_("decoder") is json.decoder  # attribute None: the module itself
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'loads'"):
        getattr_("loads")
    assert dir_() == ["decoder", "dumps"]
