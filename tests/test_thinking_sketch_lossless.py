"""The thinking detector keeps the previous call's bottom-k sketch packed (about 3 bytes a hash, not
4): packing loses nothing, so the detector judges exactly as with the plain sketch of k hashes.

(benchmarks/thinking_sketch_packing.py runs the detector as it was before the packing beside
today's on thousands of generated reasoning texts: no judgement differs.)"""

from __future__ import annotations

import heapq
import random
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from hypothesis_support import examples
from otelguard.detectors.text import gram_hashes, grams
from otelguard.detectors.thinking import (
    HASH_TYPECODE,
    SKETCH_SIZE,
    ThinkingLoopDetector,
    estimated_containment,
    packed_sketch,
    unpacked,
)

# Where the hashes lie: anywhere (crc32s), low (top bytes 0 or 1), at the top (top bytes all 255).
RANGES = ((0, 2**32), (0, 2**24 + 5), (2**32 - 300, 2**32))


@st.composite
def hash_sets(draw) -> set[int]:
    """Distinct 32-bit hashes: few or many (drawn from a seeded generator: Hypothesis builds sets of
    thousands of integers slowly)."""
    low, high = draw(st.sampled_from(RANGES))
    count = draw(st.sampled_from((0, 1, 2, 127, 128, 129, 255, 256, 300, 1000, 3000)) | st.integers(0, 400))
    rng = random.Random(draw(st.integers(0, 2**32)))
    return set(rng.sample(range(low, high), min(count, high - low)))


@settings(max_examples=examples(1000), deadline=None)
@given(hashes=hash_sets(), k=st.integers(0, 255), size=st.integers(0, 2**32 - 1))
def test_a_packed_sketch_gives_back_the_k_smallest_hashes_and_the_size(hashes, k, size):
    hashes_back, size_back = unpacked(packed_sketch(hashes, size, k))
    assert list(hashes_back) == heapq.nsmallest(k, hashes)
    assert size_back == size


def test_a_packed_sketch_of_many_hashes_takes_about_three_bytes_a_hash():
    hashes = gram_hashes(grams(" ".join(f"step {i} of the plan: check the value {i * 7}" for i in range(200))))
    assert len(hashes) > 4 * SKETCH_SIZE
    assert len(packed_sketch(hashes, len(hashes), SKETCH_SIZE)) < 3.5 * SKETCH_SIZE  # plain: 4 bytes a hash


words = st.sampled_from("the a model tool call result error check retry plan value 値 検索 ☃ é".split())


@st.composite
def restated_texts(draw) -> tuple[str, str]:
    """A text and the next call's: part of it said again (anything from none to all), then more."""
    first = " ".join(draw(st.lists(words, min_size=20, max_size=400)))
    start = draw(st.integers(0, len(first)))
    end = draw(st.integers(start, len(first)))
    more = " ".join(draw(st.lists(words, max_size=200)))
    return first, first[start:end] + " " + more


@settings(max_examples=examples(600), deadline=None)
@given(texts=restated_texts())
def test_the_detector_estimates_the_containment_the_plain_sketch_gives(texts):
    """The containment the detector judges by is the one the plain sketch (the previous call's k
    smallest hashes, as an array) gives, so are its verdicts."""
    previous, current = texts
    detector = ThinkingLoopDetector(min_reasoning_chars=1)
    detector.observe(True, previous)
    judgement = detector.observe(True, current)
    previous_windows, current_windows = grams(previous), grams(current)
    plain = array(HASH_TYPECODE, heapq.nsmallest(SKETCH_SIZE, gram_hashes(previous_windows)))
    expected = estimated_containment(plain, len(previous_windows), gram_hashes(current_windows), len(current_windows))
    assert judgement is not None and judgement.containment == expected
