"""Porter stemmer as Lucene's ``PorterStemFilter`` applies it: the C reference version of the algorithm, with its
two departures from the 1980 paper (``bli`` -> ``ble``, ``logi`` -> ``log``), written from the algorithm.

PyStemmer's ``porter`` is the Snowball port without those departures (``technology`` -> ``technologi``
there, ``technolog`` in Lucene), so Lucene-exact BM25 needs this one. Words of one or two letters are
left alone, as in Lucene."""

from __future__ import annotations

from typing import ClassVar

_VOWELS = frozenset("aeiou")


class _Word:
    __slots__ = ("b", "j", "k")

    def __init__(self, word: str) -> None:
        self.b = list(word)
        self.k = len(word) - 1
        self.j = 0

    def cons(self, i: int) -> bool:
        c = self.b[i]
        if c in _VOWELS:
            return False
        if c == "y":
            return i == 0 or not self.cons(i - 1)
        return True

    def m(self) -> int:
        """Number of VC sequences in b[0..j]."""
        n, i, j = 0, 0, self.j
        while True:
            if i > j:
                return n
            if not self.cons(i):
                break
            i += 1
        i += 1
        while True:
            while True:
                if i > j:
                    return n
                if self.cons(i):
                    break
                i += 1
            i += 1
            n += 1
            while True:
                if i > j:
                    return n
                if not self.cons(i):
                    break
                i += 1
            i += 1

    def vowel_in_stem(self) -> bool:
        return any(not self.cons(i) for i in range(self.j + 1))

    def double_c(self, i: int) -> bool:
        return i >= 1 and self.b[i] == self.b[i - 1] and self.cons(i)

    def cvc(self, i: int) -> bool:
        if i < 2 or not self.cons(i) or self.cons(i - 1) or not self.cons(i - 2):
            return False
        return self.b[i] not in "wxy"

    def ends(self, s: str) -> bool:
        n = len(s)
        if n > self.k + 1 or "".join(self.b[self.k - n + 1 : self.k + 1]) != s:
            return False
        self.j = self.k - n
        return True

    def set_to(self, s: str) -> None:
        j = self.j
        self.b[j + 1 :] = list(s)
        self.k = j + len(s)

    def r(self, s: str) -> None:
        if self.m() > 0:
            self.set_to(s)

    def step1ab(self) -> None:
        b = self.b
        if b[self.k] == "s":
            if self.ends("sses"):
                self.k -= 2
            elif self.ends("ies"):
                self.set_to("i")
            elif b[self.k - 1] != "s":
                self.k -= 1
        del b[self.k + 1 :]
        if self.ends("eed"):
            if self.m() > 0:
                self.k -= 1
        elif (self.ends("ed") or self.ends("ing")) and self.vowel_in_stem():
            self.k = self.j
            del b[self.k + 1 :]
            if self.ends("at"):
                self.set_to("ate")
            elif self.ends("bl"):
                self.set_to("ble")
            elif self.ends("iz"):
                self.set_to("ize")
            elif self.double_c(self.k):
                if b[self.k] not in "lsz":
                    self.k -= 1
            else:
                self.j = self.k
                if self.m() == 1 and self.cvc(self.k):
                    self.set_to("e")
        del b[self.k + 1 :]

    def step1c(self) -> None:
        if self.ends("y") and self.vowel_in_stem():
            self.b[self.k] = "i"

    def _first(self, table: tuple[tuple[str, str], ...]) -> None:
        for suffix, repl in table:
            if self.ends(suffix):
                self.r(repl)
                return

    _STEP2: ClassVar[dict[str, tuple]] = {
        "a": (("ational", "ate"), ("tional", "tion")),
        "c": (("enci", "ence"), ("anci", "ance")),
        "e": (("izer", "ize"),),
        "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
        "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
        "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
        "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
        "g": (("logi", "log"),),
    }
    _STEP3: ClassVar[dict[str, tuple]] = {
        "e": (("icate", "ic"), ("ative", ""), ("alize", "al")),
        "i": (("iciti", "ic"),),
        "l": (("ical", "ic"), ("ful", "")),
        "s": (("ness", ""),),
    }
    _STEP4: ClassVar[dict[str, tuple]] = {
        "a": ("al",),
        "c": ("ance", "ence"),
        "e": ("er",),
        "i": ("ic",),
        "l": ("able", "ible"),
        "n": ("ant", "ement", "ment", "ent"),
        "o": ("ion", "ou"),
        "s": ("ism",),
        "t": ("ate", "iti"),
        "u": ("ous",),
        "v": ("ive",),
        "z": ("ize",),
    }

    def step2(self) -> None:
        if self.k == 0:
            return
        self._first(self._STEP2.get(self.b[self.k - 1], ()))
        del self.b[self.k + 1 :]

    def step3(self) -> None:
        self._first(self._STEP3.get(self.b[self.k], ()))
        del self.b[self.k + 1 :]

    def step4(self) -> None:
        if self.k == 0:
            return
        for suffix in self._STEP4.get(self.b[self.k - 1], ()):
            if self.ends(suffix):
                if suffix == "ion" and not (self.j >= 0 and self.b[self.j] in "st"):
                    continue
                if self.m() > 1:
                    self.k = self.j
                    del self.b[self.k + 1 :]
                return

    def step5(self) -> None:
        self.j = self.k
        if self.b[self.k] == "e":
            a = self.m()
            if a > 1 or (a == 1 and not self.cvc(self.k - 1)):
                self.k -= 1
        if self.b[self.k] == "l" and self.double_c(self.k) and self.m() > 1:
            self.k -= 1
        del self.b[self.k + 1 :]


def porter_stem(word: str) -> str:
    """Lucene's Porter stem of a lower-case word (words of one or two letters are left alone)."""
    if len(word) <= 2:
        return word
    w = _Word(word)
    w.step1ab()
    if w.k > 0:
        w.step1c()
        w.step2()
        w.step3()
        w.step4()
        w.step5()
    return "".join(w.b[: w.k + 1])
