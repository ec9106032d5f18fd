"""Conformance vectors: the text primitives (vectors.md, "Text generator R" and "Primitives")."""

from __future__ import annotations

from otelguard.detectors.text import containment, grams, repeat_ratio

from vectors_support import R

ABC = grams("abcdefghij")


def test_r_is_deterministic_and_sized():
    """R(seed, n) is the same text on every call, n lowercase letters long."""
    text = R("some seed", 123)
    assert text == R("some seed", 123)
    assert len(text) == 123
    assert set(text) <= set("abcdefghijklmnopqrstuvwxyz")


def test_r_of_different_seeds_barely_overlaps():
    """R of two different seeds has containment about 0.01."""
    assert containment(grams(R("first seed")), grams(R("second seed"))) < 0.05


def test_r_with_itself_has_containment_one():
    """R(s) compared with itself has containment 1."""
    assert containment(grams(R("a seed")), grams(R("a seed"))) == 1


def test_grams_are_the_distinct_four_character_windows():
    """grams('abcdabcd') is the set {abcd, bcda, cdab, dabc}."""
    assert grams("abcdabcd") == {"abcd", "bcda", "cdab", "dabc"}


def test_grams_of_text_shorter_than_a_window_is_empty():
    """grams('abc') is the empty set."""
    assert grams("abc") == set()


def test_containment_of_a_set_with_itself_is_one():
    """A gram set is wholly contained in itself."""
    assert containment(ABC, ABC) == 1


def test_containment_of_disjoint_sets_is_zero():
    """grams('abcdefghij') shares nothing with grams('zzzzzzzzzz')."""
    assert containment(ABC, grams("zzzzzzzzzz")) == 0


def test_containment_with_the_empty_set_is_zero():
    """Containment with the empty set is 0, in either order."""
    assert containment(ABC, frozenset()) == 0
    assert containment(frozenset(), ABC) == 0


def test_containment_measures_the_smaller_set():
    """A small set wholly inside a larger one has containment 1, whatever the larger set adds."""
    larger = grams("abcdefghij ONLY-NEW-MATERIAL-HERE-ENTIRELY")
    assert containment(ABC, larger) == 1
    assert containment(larger, ABC) == 1


def test_repeat_ratio_of_a_cjk_loop_is_high():
    """'好。执行。' * 40 repeats itself: repeat ratio above 0.9."""
    assert repeat_ratio("好。执行。" * 40) > 0.9


def test_repeat_ratio_of_generated_text_is_low():
    """R('a unique subject') hardly repeats itself: repeat ratio below 0.1."""
    assert repeat_ratio(R("a unique subject")) < 0.1


def test_repeat_ratio_is_zero_under_sixteen_characters():
    """Text under 16 characters has repeat ratio 0, however repetitive."""
    assert repeat_ratio("aaaaaaaaaaaaaaa") == 0
