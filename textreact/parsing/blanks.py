"""The characters the parser reads as nothing: blanks around keywords (`keywords.plain` writes
them as a space or a line break for the scan), stripped from the ends of values
(`keywords.strip`), and skipped before a step (`window`). One set for every part, so that what
one part strips another never reads as text: with two, `\\rFinal Answer: 4` was an answer
"Final Answer: 4" (the scan read `\\r` as text, the strip took it off), and a run of `\\x01`
before a Final Answer hid it when short and not when long."""

from __future__ import annotations

from typing import Final

#: Characters that stand for nothing: read as blanks around keywords and stripped from values.
JUNK: Final = "\x00\ufeff\u200b"
#: What the scanner reads as a line break besides `\n` (written as `\n` for the scan): NEL
#: and the Unicode line and paragraph separators, which `str.splitlines` breaks at too.
AS_NEWLINE: Final = "\x85\u2028\u2029"
#: What the scanner reads as a blank besides a space and a tab (written as a space for the
#: scan, so that `[ \t]` in the patterns takes it): JUNK, the rest of what `str.strip()`
#: removes (a carriage return, which ends a line only before `\n`; the vertical tab, form feed
#: and the separators of ASCII), and the Unicode spaces, such as the no-break space a model or
#: a web page puts before a keyword.
AS_BLANK: Final = (
    JUNK
    + "\r\x0b\x0c\x1c\x1d\x1e\x1f"
    + "\xa0\u1680\u202f\u205f\u3000"
    + "".join(map(chr, range(0x2000, 0x200B)))
)
#: Every character read as nothing: what `str.strip()` removes, and JUNK.
BLANKS: Final = " \t\n" + AS_BLANK + AS_NEWLINE
