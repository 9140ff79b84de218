import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from printpipe.rng import KeyStream, Purpose, derive_block_key, virns

P, L = bytes(range(32)), bytes(range(32, 64))


def test_block_key_depends_on_both_secrets_game_and_block():
    key = derive_block_key(P, L, 412, 1)
    flipped = bytes([P[0] ^ 1]) + P[1:]
    others = {
        derive_block_key(flipped, L, 412, 1),
        derive_block_key(P, bytes([L[0] ^ 0x80]) + L[1:], 412, 1),
        derive_block_key(P, L, 413, 1),
        derive_block_key(P, L, 412, 2),
        derive_block_key(L, P, 412, 1),
    }
    assert key == derive_block_key(P, L, 412, 1)
    assert key not in others and len(others) == 5


def test_short_secret_is_refused():
    with pytest.raises(ValueError, match="32 bytes"):
        derive_block_key(P[:31], L, 412, 1)


def test_streams_are_independent_and_reproducible():
    key = derive_block_key(P, L, 412, 1)
    a = KeyStream(key, Purpose.PACK, 7).read(64)
    assert a == KeyStream(key, Purpose.PACK, 7).read(64)
    assert a != KeyStream(key, Purpose.PACK, 8).read(64)
    assert a != KeyStream(key, Purpose.POOLS, 7).read(64)


@given(st.integers(1, 200))
def test_permutation_is_a_permutation(size):
    stream = KeyStream(b"k" * 32, Purpose.PACK, size)
    assert sorted(stream.permutation(size)) == list(range(size))
    ranks = stream.row_ranks((3, size))
    assert (np.sort(ranks, axis=1) == np.arange(size)).all()


def test_below_respects_bounds_and_covers_them():
    draws = KeyStream(b"k" * 32, Purpose.PACK, 1).below(np.array([1, 2, 7]), (5000, 3))
    for column, bound in enumerate((1, 2, 7)):
        assert set(draws[:, column]) == set(range(bound))


def test_virns_are_a_permutation_of_ten_digit_numbers():
    key = derive_block_key(P, L, 412, 1)
    values = virns(key, np.arange(300_000))
    assert len(np.unique(values)) == len(values)
    assert values.max() < 10**10
    # Roughly uniform over the 10 digits' range, not clustered near the indices.
    assert 0.4 < values.mean() / 10**10 < 0.6
    assert (values[1000:2000] == virns(key, np.arange(1000, 2000))).all()


@given(st.lists(st.integers(0, 40), max_size=8))
def test_words_are_the_stream_s_uint64_words_in_order(counts):
    words, arrays = KeyStream(P, Purpose.PACK, 2), KeyStream(P, Purpose.PACK, 2)
    for count in counts:
        assert words.words(count) == arrays.uint64(count).tolist()
    assert words.read(16) == arrays.read(16)


@given(st.lists(st.integers(0, 10**10 - 1), max_size=200))
def test_the_audits_count_of_distinct_virns_is_the_count_of_a_set(values):
    from printpipe.generation.audit import distinct_count

    assert distinct_count(np.array(values, dtype=np.int64)) == len(set(values))
