"""`low-novelty`: a call that keeps saying what it has already said, in other orders and other words.

Measured on prose only (`prose.ProseFilter`): code, diffs and listings repeat their words by
construction.

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

import re
from collections import deque
from dataclasses import dataclass

from .prose import ProseFilter

LOW_NOVELTY = "low-novelty"
MAX_SEEN = 65_536
MIN_WINDOW_GRAMS = 24  # a window with fewer n-grams (long words, few of them) is not judged
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|[^\W_]+")


@dataclass(slots=True, frozen=True)
class NoveltyDip:
    chars: int  # characters read when the window's novelty fell below the threshold
    novelty: float


class NoveltyMeter:
    """Fed the text of one call (in pieces of any size); reports the first window of its prose
    (`prose.ProseFilter`: code, diffs and listings left out) whose novelty is below `min_novelty`,
    and tracks the lowest novelty of any full window (for measurements). The window counts prose
    characters; a dip's `chars` is its place in the whole text."""

    __slots__ = ("min_novelty", "n", "window", "_carry", "_carry_at", "_prose", "_prose_chars", "_recent",
                 "_recent_new", "_seen", "_words", "_next_at", "dip", "lowest")

    def __init__(self, *, window: int, n: int, min_novelty: float):
        self.window, self.n, self.min_novelty = window, n, min_novelty
        self._seen: set[tuple[str, ...]] = set()
        self._words: list[str] = []  # the last n - 1 words before the text to come
        # The prose end offsets of the n-grams in the window, and of the new ones among them.
        self._recent: deque[int] = deque()
        self._recent_new: deque[int] = deque()
        self._prose = ProseFilter()
        self._prose_chars = 0  # prose characters read
        self._carry = ""  # a word the last piece may have cut in two
        self._carry_at = 0  # where it starts in the whole text
        self._next_at = 0  # where the prose read so far ends in the whole text
        self.dip: NoveltyDip | None = None
        self.lowest = 1.0

    def feed(self, text: str) -> NoveltyDip | None:
        """Read more of the call's text; returns the dip on the piece that first reaches one."""
        if self.dip is not None:
            return None
        for segment, at in self._prose.feed(text):
            dip = self._read_prose(segment, at)
            if dip is not None:
                return dip
        return None

    def finish(self) -> NoveltyDip | None:
        """The text ended: read its last line and the word held back."""
        if self.dip is not None:
            return None
        for segment, at in self._prose.finish():
            dip = self._read_prose(segment, at)
            if dip is not None:
                return dip
        return self._read_carry()

    def _read_carry(self) -> NoveltyDip | None:
        if not self._carry:
            return None
        carry, self._carry = self._carry, ""
        end = self._prose_chars
        return self._read([carry.lower()], [end], self._carry_at + len(carry) - end)

    def _read_prose(self, segment: str, at: int) -> NoveltyDip | None:
        if at != self._next_at:  # code was left out between: a word held back ended before it
            dip = self._read_carry()
            if dip is not None:
                return dip
        self._next_at = at + len(segment)
        if self._carry:  # (not counted yet: it is read again with what follows it)
            at, segment = self._carry_at, self._carry + segment
        base = self._prose_chars
        self._prose_chars += len(segment)
        matches = list(_WORD.finditer(segment))
        # The last word may continue in the next piece: keep it back unless the text ends after it.
        if matches and matches[-1].end() == len(segment):
            self._carry, self._carry_at = segment[matches[-1].start():], at + matches[-1].start()
            self._prose_chars -= len(self._carry)
            matches.pop()
        else:
            self._carry = ""
        words = [match.group().lower() for match in matches]
        return self._read(words, [base + match.end() for match in matches], at - base)

    def _read(self, words: list[str], ends: list[int], to_text: int) -> NoveltyDip | None:
        """Counts the n-grams ending at `words` (`ends`: each word's end in the prose; `to_text` turns
        a prose offset into the whole text's)."""
        n, seen, recent, recent_new, window = self.n, self._seen, self._recent, self._recent_new, self.window
        run = self._words + words
        self._words = run[max(0, len(run) - n + 1):]
        # The k-th n-gram of the run ends at its word k + n - 1, so at word k + n - 1 - len(before) of `words`.
        grams = zip(*(run[i:] for i in range(n)))
        for gram, end in zip(grams, ends[n - 1 - (len(run) - len(words)):]):
            if gram not in seen:
                if len(seen) < MAX_SEEN:
                    seen.add(gram)
                recent_new.append(end)
            recent.append(end)
            oldest = end - window
            while recent[0] <= oldest:
                recent.popleft()
            while recent_new and recent_new[0] <= oldest:
                recent_new.popleft()
            if end >= window and len(recent) >= MIN_WINDOW_GRAMS:
                novelty = len(recent_new) / len(recent)
                if novelty < self.lowest:
                    self.lowest = novelty
                if novelty < self.min_novelty:
                    self.dip = NoveltyDip(end + to_text, novelty)
                    return self.dip
        return None


def lowest_novelty(text: str, *, window: int, n: int) -> float:
    """The lowest novelty of any full window of `text` (1.0 when the text fills none)."""
    meter = NoveltyMeter(window=window, n=n, min_novelty=0.0)
    meter.feed(text)
    meter.finish()
    return meter.lowest
