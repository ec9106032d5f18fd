"""`low-novelty`: a call that keeps saying what it has already said, in other orders and other words.

Over a sliding window of `window` characters, the share of word n-grams never seen before in the
call. A loop that drifts (shuffled sentences, jittered whitespace or punctuation, rotating wording,
two states alternating) repeats its n-grams although its characters never repeat exactly; prose
keeps making new ones. Words are lowercased letter or digit runs (punctuation and spacing drop
out); each CJK character is a word of its own (those scripts put no spaces between words).

Bounded: at most MAX_SEEN distinct n-grams are remembered per call (about 400 000 characters of
prose); past that, n-grams not remembered count as new, so a very long call can only look more
novel, never less.
"""

from __future__ import annotations

from collections import deque

from ..lazy_pattern import lazy_pattern
from ..record_type import record

LOW_NOVELTY = "low-novelty"
MAX_SEEN = 65_536
MIN_WINDOW_GRAMS = 24  # a window with fewer n-grams (long words, few of them) is not judged
# Compiled on first use: its CJK ranges take ~19 M instructions to compile (5 % of a CLI hook, which never uses it).
_WORD = lazy_pattern(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|[^\W_]+")


@record(frozen=True)
class NoveltyDip:
    chars: int  # characters read when the window's novelty fell below the threshold
    novelty: float


class NoveltyMeter:
    """Fed the text of one call (in pieces of any size); reports the first window whose novelty is
    below `min_novelty`, and tracks the lowest novelty of any full window (for measurements)."""

    __slots__ = ("min_novelty", "n", "window", "_carry", "_chars", "_recent", "_seen", "_window_new",
                 "_words", "dip", "lowest")

    def __init__(self, *, window: int, n: int, min_novelty: float):
        self.window, self.n, self.min_novelty = window, n, min_novelty
        self._seen: set[tuple[str, ...]] = set()
        self._words: deque[str] = deque(maxlen=n)  # the last n - 1 words before the text to come
        self._recent: deque[tuple[int, bool]] = deque()  # (end offset, new?) of the n-grams in the window
        self._window_new = 0
        self._carry = ""  # a word the last piece may have cut in two
        self._chars = 0
        self.dip: NoveltyDip | None = None
        self.lowest = 1.0

    def feed(self, text: str) -> NoveltyDip | None:
        """Read more of the call's text; returns the dip on the piece that first reaches one."""
        if self.dip is not None:
            return None
        base = self._chars - len(self._carry)
        text = self._carry + text
        self._chars = base + len(text)
        matches = list(_WORD.finditer(text))
        # The last word may continue in the next piece: keep it back unless the text ends after it.
        if matches and matches[-1].end() == len(text):
            self._carry = text[matches[-1].start():]
            matches.pop()
        else:
            self._carry = ""
        return self._read(((base + match.end(), match.group().lower()) for match in matches))

    def finish(self) -> NoveltyDip | None:
        """The text ended: read the word held back."""
        if self.dip is not None or not self._carry:
            return None
        carry, self._carry = self._carry, ""
        return self._read([(self._chars, carry.lower())])

    def _read(self, words) -> NoveltyDip | None:
        n, seen, recent, window = self.n, self._seen, self._recent, self.window
        last = self._words
        for end, word in words:
            last.append(word)
            if len(last) < n:
                continue
            gram = tuple(last)
            new = gram not in seen
            if new and len(seen) < MAX_SEEN:
                seen.add(gram)
            recent.append((end, new))
            self._window_new += new
            while recent[0][0] <= end - window:
                self._window_new -= recent.popleft()[1]
            if end >= window and len(recent) >= MIN_WINDOW_GRAMS:
                novelty = self._window_new / len(recent)
                if novelty < self.lowest:
                    self.lowest = novelty
                if novelty < self.min_novelty:
                    self.dip = NoveltyDip(end, novelty)
                    return self.dip
        return None


def lowest_novelty(text: str, *, window: int, n: int) -> float:
    """The lowest novelty of any full window of `text` (1.0 when the text fills none)."""
    meter = NoveltyMeter(window=window, n=n, min_novelty=0.0)
    meter.feed(text)
    meter.finish()
    return meter.lowest
