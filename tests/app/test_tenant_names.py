"""Tenant names and snapshot namespaces: no tenant can imitate another's stored keys (fast, no model)."""
from __future__ import annotations

import pytest

from engine.snapshot import names_of, owned_name, owner_view, split_owned


def test_snapshot_keys_carry_their_owner_unambiguously():
    for owner, name in [("a", "dossier-1"), ("a", "b/dossier"), ("a/b", "x"), ("~1:a", "x"), ("a", "")]:
        assert split_owned(owned_name(owner, name)) == (owner, name)
    keys = [owned_name("a", "x"), owned_name("ab", "x"), owned_name("a", "b/x"), "plain", "~9:a/x", "~1:ab"]
    assert names_of("a", keys) == ["b/x", "x"] and names_of("ab", keys) == ["x"] and names_of("b", keys) == []
    with pytest.raises(ValueError):
        owned_name("", "x")


def test_owner_view_keeps_engine_figures_and_only_the_owners_snapshots():
    stats = {"kv_blocks_used": 7, "tokens_per_s": 3.5, "snapshots": 3, "snapshot_evictions": 2,
             "snapshot_names": [owned_name("a", "d1"), owned_name("b", "d2"), owned_name("b", "d3")]}
    assert owner_view(stats, "b") == {"kv_blocks_used": 7, "tokens_per_s": 3.5, "snapshots": 2,
                                      "snapshot_names": ["d2", "d3"]}
    assert owner_view(stats, None) == {"kv_blocks_used": 7, "tokens_per_s": 3.5}  # e.g. /metrics


def test_tenant_names_that_could_imitate_another_are_refused():
    from app.settings import Settings

    assert Settings(api_keys={"k": "acme-legal.eu_1"}).api_keys == {"k": "acme-legal.eu_1"}
    for bad in ("a:b", "a/b", "", "x" * 65, "tenant a"):
        with pytest.raises(ValueError, match="tenant names"):
            Settings(api_keys={"k": bad})
