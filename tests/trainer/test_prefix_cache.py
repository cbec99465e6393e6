"""The store of KV prefixes kept between a rollout's turns, and the batch laid out from them."""

from __future__ import annotations

import pytest
import torch

from trainer.prefix_cache import Prefix, PrefixStore, batch_cache


def prefix(length: int, fill: float = 1.0, layers: int = 2) -> Prefix:
    keys = tuple(torch.full((2, length, 4), fill) for _ in range(layers))
    return Prefix(keys, tuple(k + 0.5 for k in keys))


def test_take_finds_the_longest_stored_prefix_and_removes_it():
    store = PrefixStore(max_tokens=100)
    store.put([1, 2], prefix(2, 1.0))
    store.put([1, 2, 3, 4], prefix(4, 2.0))
    store.put([9, 9, 9], prefix(3, 3.0))
    got = store.take([1, 2, 3, 4, 5, 6])
    assert got is not None and got.length == 4 and got.keys[0][0, 0, 0] == 2.0
    assert store.take([1, 2, 3, 4, 5, 6]).length == 2   # the longer one was taken
    assert store.take([1, 2, 3]) is None and store.take([7]) is None
    assert store.tokens == 3


def test_a_whole_context_in_the_store_leaves_one_token_to_feed():
    store = PrefixStore(max_tokens=100)
    store.put([1, 2, 3], prefix(3))
    got = store.take([1, 2, 3])
    assert got is not None and got.length == 2 and all(k.shape[1] == 2 for k in got.keys + got.values)


def test_the_store_keeps_at_most_max_tokens_oldest_dropped_first():
    store = PrefixStore(max_tokens=5)
    store.put([1, 2], prefix(2))
    store.put([3, 4], prefix(2))
    store.put([5, 6], prefix(2))
    assert list(store.entries) == [(3, 4), (5, 6)] and store.tokens == 4
    store.put(list(range(6)), prefix(6))   # longer than the whole store: not kept
    assert store.tokens == 4
    store.put([3, 4], prefix(2))   # stored again: counted once
    assert store.tokens == 4
    with pytest.raises(ValueError, match="3 positions stored under 2"):
        store.put([1, 2], prefix(3))
    store.clear()
    assert not store.entries and store.tokens == 0


def test_batch_cache_lays_prefixes_and_suffixes_right_aligned():
    ids, mask, cache = batch_cache([prefix(2, 1.0), None, prefix(1, 3.0)], [[7], [5, 6, 8], [4, 4]], 0,
                                   torch.device("cpu"))
    assert ids.tolist() == [[0, 0, 7], [5, 6, 8], [0, 4, 4]]
    assert mask.tolist() == [[1, 1, 0, 0, 1], [0, 0, 1, 1, 1], [0, 1, 0, 1, 1]]
    keys = cache.layers[0].keys
    assert keys.shape == (3, 2, 2, 4)
    assert keys[0].eq(1.0).all() and keys[1].eq(0).all()
    assert keys[2, :, 0].eq(0).all() and keys[2, :, 1].eq(3.0).all()
    assert cache.layers[1].values[0].eq(1.5).all()
    ids, mask, cache = batch_cache([None, None], [[1], [2, 3]], 9, torch.device("cpu"))
    assert cache is None and ids.tolist() == [[9, 1], [2, 3]] and mask.tolist() == [[0, 1], [1, 1]]
