#!/usr/bin/env python3
"""Prints the two tables of src/util/utf8width.c from Python's unicodedata:
the code points that take two columns on a terminal (East Asian Width W or
F) and those that take none (general category Mn, Me or Cf, but U+00AD and
the prepended concatenation marks, which are shown). Paste its output over
the tables there when moving to a newer Unicode."""
import unicodedata

# Cf characters that terminals show: the soft hyphen and the prepended
# concatenation marks (PropList.txt, Prepended_Concatenation_Mark).
SHOWN_CF = {0x00AD, 0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD,
            0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD, 0x110CD}


CJK_DEFAULT_WIDE = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF),
                    (0x20000, 0x2FFFD), (0x30000, 0x3FFFD)]


def zero(cp):
    cat = unicodedata.category(chr(cp))
    return cat in ("Mn", "Me") or (cat == "Cf" and cp not in SHOWN_CF)


def wide(cp):
    # Unassigned code points take the default of EastAsianWidth.txt: wide
    # in the CJK blocks and planes, else not (unicodedata gives them no
    # reliable value).
    if unicodedata.category(chr(cp)) == "Cn":
        return any(lo <= cp <= hi for lo, hi in CJK_DEFAULT_WIDE)
    return unicodedata.east_asian_width(chr(cp)) in ("W", "F")


def ranges(pred):
    out, start = [], None
    for cp in range(0x110000 + 1):
        hit = cp <= 0x10FFFF and pred(cp)
        if hit and start is None:
            start = cp
        elif not hit and start is not None:
            out.append((start, cp - 1))
            start = None
    return out


def table(name, rs):
    print("static const struct range %s[] = {" % name)
    for lo, hi in rs:
        print("    {0x%04X, 0x%04X}," % (lo, hi))
    print("};")


print("/* Unicode %s */" % unicodedata.unidata_version)
table("zero_width", ranges(zero))
print()
table("wide", ranges(wide))
